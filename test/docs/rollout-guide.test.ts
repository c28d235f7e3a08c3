/**
 * docs/rollout.md works as written, walked as a user types it: a real
 * `node bin/authz.js serve` on a fresh data dir (the printed test key), and the
 * page's shell blocks run through `sh`, in order, in a scratch folder standing
 * for the clone (its `examples/` is the clone's): the `policies/` folder made,
 * the shadow policy appended to its list, validate/test/compile/push, the
 * `candidate/` copy, `authz diff`, `authz replay` after a decision the change
 * flips, and the final push. `npx authz` runs this checkout's bin; the service's
 * address and the key replace the page's placeholders. Each command's output is
 * held to the page's (its `...` lines stand for what varies).
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAsTyped, type ShellResult } from '../helpers/doc-shell.js';
import { request, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const PAGE = readFileSync(join(ROOT, 'docs', 'rollout.md'), 'utf8');

/** The fenced blocks of a section (`## <n>. ...`, or the text before the first numbered one for ''), in order. */
function blocksOf(section: string): Array<{ lang: string; body: string }> {
  const start = section === '' ? 0 : PAGE.indexOf(`\n## ${section}`);
  if (start < 0) throw new Error(`docs/rollout.md has no section "## ${section}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  return [...PAGE.slice(start, end < 0 ? undefined : end).matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!,
    body: m[2]!,
  }));
}

const shBlocks = (section: string) =>
  blocksOf(section)
    .filter((b) => b.lang === 'sh')
    .map((b) => b.body);
/** The output blocks (no language) of a section. */
const outputs = (section: string) =>
  blocksOf(section)
    .filter((b) => b.lang === '')
    .map((b) => b.body);

/** A `$ command` block: the command (its `\` continuations joined) and the output lines shown after it. */
function commandBlock(body: string): { command: string; output: string[] } {
  const lines = body.trimEnd().split('\n');
  const command: string[] = [lines.shift()!.replace(/^\$ /, '')];
  while (command.at(-1)!.endsWith('\\')) command.push(lines.shift()!);
  return { command: command.join('\n'), output: lines };
}

/**
 * Holds printed lines to the page's: each page line equals a printed line, in
 * order; a page line `...` (or ending in `...`, or `...(...)`) stands for any
 * lines, or the rest of a line.
 */
function expectLike(printed: string[], page: string[], base: string): void {
  let at = 0;
  for (const line of page) {
    const want = line.replaceAll('http://127.0.0.1:8080', base);
    if (want.trim() === '...') continue;
    const prefix = want.includes('...') ? want.slice(0, want.indexOf('...')) : null;
    const found = printed.findIndex(
      (line, i) => i >= at && (prefix === null ? line === want : line.startsWith(prefix)),
    );
    expect(found, `the page's line\n  ${want}\nin what was printed:\n${printed.join('\n')}`).toBeGreaterThanOrEqual(at);
    at = found + 1;
  }
}

describe('docs/rollout.md', () => {
  let server: FreshServe | undefined;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  /** Runs a page's shell text in the scratch clone: exit code and output. */
  const sh = (script: string): Promise<ShellResult> => runAsTyped(script, server!, dir, env);

  beforeAll(async () => {
    server = await startFreshServe('authz-rollout-doc-');
    dir = mkdtempSync(join(tmpdir(), 'authz-rollout-clone-'));
    symlinkSync(join(ROOT, 'examples'), join(dir, 'examples'));
    env = { ...process.env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
    delete env.AUTHZ_URL;
    delete env.AUTHZ_API_KEY;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The setup block's `export` line, which later blocks (each a fresh shell here) rely on, as a user's terminal keeps it. */
  const exported = () =>
    shBlocks('')
      .find((b) => b.includes('export AUTHZ_URL'))!
      .split('\n')
      .find((l) => l.startsWith('export '))!;

  it('the setup and section 1: the folder, the shadow policy in its list, explain as shown', async () => {
    const setup = await sh(shBlocks('')[0]!);
    expect(setup.code, setup.stderr).toBe(0);
    const [append] = shBlocks('1.');
    expect(append).toContain("cat >> policies/policies.yaml <<'YAML'");
    const appended = await sh(append!);
    expect(appended.code, appended.stderr).toBe(0);
    const explain = commandBlock(outputs('1.')[0]!);
    const r = await sh(explain.command);
    expect(r.code, r.stderr).toBe(0);
    expectLike(r.stdout.trimEnd().split('\n'), explain.output, server!.base);
  });

  it('section 1: validate, test, compile and push, printing what the page shows', async () => {
    const block = shBlocks('1.')[1]!;
    expect(block).toContain('npx authz push bundle.json');
    const r = await sh(`${exported()}\n${block}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const pushed = r.stdout.slice(r.stdout.indexOf('policies: '));
    expectLike(pushed.trimEnd().split('\n'), outputs('1.')[1]!.trimEnd().split('\n'), server!.base);
    // The shadow policy is in the service.
    expect(
      (await request(server!.base, server!.testKey, 'GET', '/v1/policies/pol_support_refund_chat_review_over_30')).body
        .state,
    ).toBe('shadow');
  });

  it('section 3: the candidate, diff (exit 1: a change) and replay (exit 1: a decision would change), as shown', async () => {
    // A decision the candidate changes: a chat refund of USD 40.
    const decided = await request(server!.base, server!.testKey, 'POST', '/v1/decisions', {
      agent_id: 'support-bot-1',
      action: 'payments.refund',
      resource: 'order:1001',
      amount: 40,
      context: { channel: 'chat' },
    });
    expect(decided.body).toMatchObject({ effect: 'allow', metadata: { shadow: { effect: 'review' } } });
    const made = await sh(shBlocks('3.')[0]!);
    expect(made.code, made.stderr).toBe(0);
    const [diffBlock, replayBlock] = outputs('3.');
    const diff = commandBlock(diffBlock!);
    const d = await sh(diff.command);
    expect(d.code).toBe(1);
    expect(d.stdout.trimEnd().split('\n')).toEqual(diff.output);
    const replay = commandBlock(replayBlock!);
    const r = await sh(`${exported()}\n${replay.command}`);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^replayed 1 decisions? of the last 7d .* against candidate: 1 would change$/m);
    expect(r.stdout).toMatch(/^ {2}allow \(policy\.matched\) -> review \(policy\.matched\): 1 {3}e\.g\. dec_\w+$/m);
    expect(r.stdout).toContain('actions most affected: payments.refund (1)');
  });

  it('section 4: the candidate pushed, its change shown; the policy enabled', async () => {
    const block = shBlocks('4.')[0]!;
    const r = await sh(`${exported()}\n${block}`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expectLike(
      r.stdout.slice(r.stdout.indexOf('policies: ')).trimEnd().split('\n'),
      outputs('4.')[0]!.trimEnd().split('\n'),
      server!.base,
    );
    expect(
      (await request(server!.base, server!.testKey, 'GET', '/v1/policies/pol_support_refund_chat_review_over_30')).body
        .state,
    ).toBe('enabled');
  });
});
