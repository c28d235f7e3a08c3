/**
 * docs/trifecta.md works when typed in order (issue 48: "the trifecta example
 * run in npm test"): the first terminal's token command makes a token the
 * service accepts, `authz serve` (what `npm start` runs) starts with it on a
 * fresh data dir and loads the example policies; the second terminal's block
 * (that token pasted, the printed test key, the reviewer key made with
 * `authz keys create`) and every later shell block run through `sh` in one
 * session in a scratch clone (dist/ and examples/ of this checkout; mail.yaml
 * and files.yaml saved from section 2). The assistant runs for real: two stdio
 * `authz mcp-proxy` processes in one session before the example's MCP servers.
 * Without the injected mail (section 3) it prints what the page shows and the
 * session holds `untrusted` from the gateway; with it (section 4) it runs in
 * the background, as in its own terminal, while the reviewer (section 5) finds
 * the held send, reads why (the labels it was decided with, the session's
 * labels and decisions) and denies it; then it prints what the page shows.
 * Section 6: under the Rule of Two (the configurations' agent changed by the
 * page's sed) the same run waits at the file read, which the reviewer denies;
 * its policy tests pass as shown.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';
import { ensureProxyBuilt } from '../mcp/helpers/proxy.js';

const run = promisify(execFile);
const PAGE = readFileSync(join(ROOT, 'docs', 'trifecta.md'), 'utf8');

/** The fenced blocks of a section (`## <n>. ...`) in order, with their languages. */
function blocksOf(section: string): Array<{ lang: string; body: string }> {
  const start = PAGE.indexOf(`\n## ${section}`);
  if (start < 0) throw new Error(`docs/trifecta.md has no section "## ${section}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  return [...PAGE.slice(start, end < 0 ? undefined : end).matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!,
    body: m[2]!,
  }));
}
const blocks = (section: string, lang: string) =>
  blocksOf(section)
    .filter((b) => b.lang === lang)
    .map((b) => b.body);

const normalised = (text: string) => text.replace(/dec_\w+/g, 'dec_...');

describe('docs/trifecta.md: the lethal trifecta, end to end', () => {
  let server: FreshServe | undefined;
  let token: string;
  let dir: string;

  beforeAll(async () => {
    ensureProxyBuilt();
    const first = blocks('1.', 'sh')[0]!;
    expect(first).toContain('npm start');
    const tokenLine = first.split('\n').find((l) => l.startsWith('export AUTHZ_ADMIN_TOKEN='))!;
    token = (await run('sh', ['-c', `${tokenLine}\necho "$AUTHZ_ADMIN_TOKEN"`], { cwd: ROOT })).stdout.trim();
    expect(token.length).toBeGreaterThanOrEqual(16);
    server = await startFreshServe('authz-trifecta-doc-', { AUTHZ_ADMIN_TOKEN: token });
    // A clone's working directory: its dist/ and examples/, and the two configurations saved from section 2.
    dir = mkdtempSync(join(tmpdir(), 'authz-trifecta-clone-'));
    symlinkSync(join(ROOT, 'dist'), join(dir, 'dist'));
    symlinkSync(join(ROOT, 'examples'), join(dir, 'examples'));
    const [mail, files] = blocks('2.', 'yaml');
    writeFileSync(join(dir, 'mail.yaml'), mail!);
    writeFileSync(join(dir, 'files.yaml'), files!);
  }, 300_000);

  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await server?.stop();
  });

  it('section 2 shows the policy as examples/email-assistant/policies.yaml has it', () => {
    const shown = blocks('2.', 'yaml')[2]!;
    const file = readFileSync(join(ROOT, 'examples', 'email-assistant', 'policies.yaml'), 'utf8');
    const lines = file.split('\n').map((l) => l.trim());
    for (const line of shown.trim().split('\n')) expect(lines, line).toContain(line.trim());
    expect(file).toContain('- name: email-assistant-send-outside-after-both');
  });

  it('every step prints what the page shows: the outside send goes without the injected mail, and waits for the reviewer with it', async () => {
    const setup = blocks('1.', 'sh')[1]!
      .replace('export AUTHZ_ADMIN_TOKEN=...', `export AUTHZ_ADMIN_TOKEN=${token}`)
      .replace('AUTHZ_API_KEY=svc_test_sk_...', `AUTHZ_API_KEY=${server!.testKey}`)
      .replaceAll('http://127.0.0.1:8080', server!.base);
    expect(setup).not.toContain('...');
    const [without, session1] = blocks('3.', 'sh');
    const [injected] = blocks('4.', 'sh');
    const [reviewer] = blocks('5.', 'sh');
    const [guarded, guardedReviewer, policyTests] = blocks('6.', 'sh');
    const guardedOut = join(dir, 'assistant-run-3.out');
    expect(injected!.trim()).toBe('node dist/examples/email-assistant/assistant.js --session run-2 --injected');
    const marker = (name: string) => `printf '\\n=== %s\\n' '${name}'`;
    const agentOut = join(dir, 'assistant-run-2.out');
    const script = [
      // `npx authz` is this checkout's bin (a clone's npx finds it in node_modules/.bin).
      `npx() { if [ "$1" = authz ]; then shift; node "${join(ROOT, 'bin', 'authz.js')}" "$@"; else command npx "$@"; fi; }`,
      'set -e',
      setup,
      marker('without'),
      without!,
      marker('session 1'),
      session1!,
      // Section 4 in its own terminal: in the background, its output kept.
      `( ${injected!.trim()} ) > "${agentOut}" 2>&1 &`,
      // The reviewer acts once the send is held (a human would see it arrive in the queue).
      `until curl -s "$AUTHZ_URL/v1/reviews" -H "Authorization: Bearer $REVIEWER_KEY" | grep -q '"session_id":"run-2"'; do sleep 0.2; done`,
      marker('reviewer'),
      reviewer!,
      'wait',
      // Section 6: the Rule of Two, the assistant again in its own terminal, the reviewer in the second.
      `( ${guarded!.trim().replaceAll('\n', ' && ')} ) > "${guardedOut}" 2>&1 &`,
      `until curl -s "$AUTHZ_URL/v1/reviews" -H "Authorization: Bearer $REVIEWER_KEY" | grep -q '"session_id":"run-3"'; do sleep 0.2; done`,
      marker('guarded reviewer'),
      guardedReviewer!,
      'wait',
      marker('policy tests'),
      policyTests!,
    ].join('\n');
    const env: NodeJS.ProcessEnv = { ...process.env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
    for (const k of ['AUTHZ_ADMIN_TOKEN', 'AUTHZ_URL', 'AUTHZ_API_KEY', 'AUTHZ_SESSION_ID']) delete env[k];
    let stdout: string;
    try {
      ({ stdout } = await run('sh', ['-c', script], { cwd: dir, env, timeout: 240_000 }));
    } catch (e) {
      const out = (() => {
        try {
          return readFileSync(agentOut, 'utf8');
        } catch {
          return '';
        }
      })();
      throw new Error(
        `the walk failed: ${(e as { stderr?: string }).stderr ?? e}\n${(e as { stdout?: string }).stdout ?? ''}\nassistant (section 4):\n${out}`,
      );
    }
    const parts = Object.fromEntries(
      stdout
        .split(/^=== /m)
        .slice(1)
        .map((p) => [p.slice(0, p.indexOf('\n')), p.slice(p.indexOf('\n') + 1)]),
    );
    const [withoutText, session1Text] = blocks('3.', 'text');
    expect(parts.without!.trimEnd()).toBe(withoutText!.trimEnd());
    expect(parts['session 1']!.trimEnd()).toBe(session1Text!.trimEnd());
    // The reviewer's view: the held send, the labels it was decided with, their sources, the session's decisions; then the denial.
    expect(normalised(parts.reviewer!).trimEnd()).toBe(blocks('5.', 'text').join('').trimEnd());
    const lines = parts.reviewer!.trim().split('\n');
    const labelled = lines.slice(1, 3).map((l) => (JSON.parse(l) as string[])[2]);
    const listed = lines.slice(3, 7).map((l) => l.split(' '));
    // Each label names the decision whose result added it: the inbox read and the file read.
    expect(labelled).toEqual([
      listed.find((d) => d[1] === 'mail.read')![0],
      listed.find((d) => d[1] === 'files.read')![0],
    ]);
    // The assistant, once denied, ended as the page shows.
    expect(normalised(readFileSync(agentOut, 'utf8')).trimEnd()).toBe(blocks('4.', 'text')[0]!.trimEnd());
    // The held decision is the one the assistant was refused with.
    expect(readFileSync(agentOut, 'utf8')).toContain(`review.denied (decision ${listed[0]![0]})`);
    // The Rule of Two: the file read waited (untrusted and external held), was denied, and the payroll was never read.
    const [guardedDenied, guardedText, testsText] = blocks('6.', 'text');
    expect(parts['guarded reviewer']!.trim()).toBe(guardedDenied!.trim());
    expect(normalised(readFileSync(guardedOut, 'utf8')).trimEnd()).toBe(guardedText!.trimEnd());
    expect(parts['policy tests']!.trim().split('\n').at(-1)).toBe(testsText!.trim().split('\n').at(-1));
  }, 300_000);
});
