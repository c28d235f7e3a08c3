/**
 * docs/reviews.md, "End to end, with curl", works when typed in order: the
 * first terminal's token command makes a token the service accepts (16+
 * characters), `authz serve` (what `npm start` runs) starts with it on a fresh
 * data dir and prints the account and the test key; the second terminal's
 * block (that token pasted, the printed test key as $AGENT_KEY, the reviewer
 * key made with `authz keys create --account-name default`) and then every
 * step's shell block run through `sh` in one session, as typed in one terminal,
 * step 2's long poll in the background as a third terminal would (it answers
 * the moment step 4 approves). The answers are checked step by step: the
 * decision awaits approval, the waiting agent gets the approval, the queue
 * lists it, the reviewer approves, the agent takes its permit and confirms.
 * (A later start naming the account: test/runtime/serve-first-start.test.ts.)
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const run = promisify(execFile);
const PAGE = readFileSync(join(ROOT, 'docs', 'reviews.md'), 'utf8');

/** The sh blocks of "End to end, with curl", in order. */
function walk(): string[] {
  const start = PAGE.indexOf('\n## End to end, with curl');
  const end = PAGE.indexOf('\n## ', start + 1);
  return [...PAGE.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('docs/reviews.md: end to end, with curl', () => {
  let server: FreshServe | undefined;
  let token: string;
  const blocks = walk();

  beforeAll(async () => {
    // The first terminal: the token command, as typed (node prints it).
    const first = blocks[0]!;
    expect(first).toContain('npm start');
    const tokenLine = first.split('\n').find((l) => l.startsWith('export AUTHZ_ADMIN_TOKEN='))!;
    token = (await run('sh', ['-c', `${tokenLine}\necho "$AUTHZ_ADMIN_TOKEN"`], { cwd: ROOT })).stdout.trim();
    expect(token.length).toBeGreaterThanOrEqual(16);
    server = await startFreshServe('authz-reviews-doc-', { AUTHZ_ADMIN_TOKEN: token });
  }, 120_000);

  const waitOut = join(ROOT, `.reviews-doc-wait-${process.pid}.json`);
  afterAll(async () => {
    rmSync(waitOut, { force: true });
    await server?.stop();
  });

  it('every step answers as the page says', async () => {
    const [, second, policy, ask, wait, queue, review, take] = blocks;
    expect(blocks).toHaveLength(8);
    // The second terminal: the pasted token, the printed test key, the reviewer key made by the CLI.
    const setup = second!
      .replace('export AUTHZ_ADMIN_TOKEN=...', `export AUTHZ_ADMIN_TOKEN=${token}`)
      .replace('AGENT_KEY=svc_test_sk_...', `AGENT_KEY=${server!.testKey}`)
      .replaceAll('http://127.0.0.1:8080', server!.base);
    expect(setup).not.toContain('...');
    // curl prints no newline after a body: each marker starts a line of its own.
    const marker = (name: string) => `printf '\\n=== %s\\n' '${name}'`;
    const script = [
      // `npx authz` is this checkout's bin (a clone's npx finds it in node_modules/.bin).
      `npx() { if [ "$1" = authz ]; then shift; node "${join(ROOT, 'bin', 'authz.js')}" "$@"; else command npx "$@"; fi; }`,
      'set -e',
      setup,
      marker('reviewer key'),
      'echo "$REVIEWER_KEY"',
      marker('policy'),
      policy!,
      marker('ask'),
      ask!,
      // Step 2 in a third terminal: in the background, its answer kept.
      `( ${wait!.trim()} ) > "$WAIT_OUT" &`,
      marker('queue'),
      queue!,
      marker('review'),
      review!,
      'wait',
      marker('take'),
      take!,
    ].join('\n');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      AUTHZ_URL: server!.base,
      WAIT_OUT: waitOut,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    };
    delete env.AUTHZ_ADMIN_TOKEN;
    let stdout: string;
    let stderr: string;
    try {
      ({ stdout, stderr } = await run('sh', ['-c', script], { cwd: ROOT, env }));
    } catch (e) {
      throw new Error(
        `the walk failed: ${(e as { stderr?: string }).stderr ?? e}\n${(e as { stdout?: string }).stdout ?? ''}`,
      );
    }
    const parts = Object.fromEntries(
      stdout
        .split(/^=== /m)
        .slice(1)
        .map((p) => [p.slice(0, p.indexOf('\n')), p.slice(p.indexOf('\n') + 1).trim()]),
    );
    expect(parts['reviewer key']).toMatch(/^svc_test_sk_\w+$/);
    // The reviewer key reads the policies too (the Reviews view names them and the amounts' units).
    const policies = await request(server!.base, parts['reviewer key']!, 'GET', '/v1/policies?limit=1');
    expect(policies.status, JSON.stringify(policies.body)).toBe(200);
    // authz keys create --account-name default says, beside the JSON piped to jq, that it reused the seeded account.
    expect(stderr).toMatch(/^using the existing account acc_\w+ \(default\)$/m);
    const created = JSON.parse(parts.policy!);
    expect(created).toMatchObject({ object: 'policy', name: 'refunds-approved-first', effect: 'review', priority: 1 });
    // Step 1: echo "$DECISION" printed it.
    const asked = JSON.parse(parts.ask!);
    expect(asked).toMatchObject({
      object: 'decision',
      effect: 'review',
      status: 'awaiting_approval',
      permit_token: null,
      review: { status: 'open', reviewer: null },
    });
    // Step 3: the queue has it.
    expect(JSON.parse(parts.queue!).data.map((d: { id: string }) => d.id)).toContain(asked.id);
    // Step 4: approved by dana.
    expect(JSON.parse(parts.review!)).toMatchObject({
      id: asked.id,
      status: 'pending',
      review: { status: 'approved', reviewer: 'dana@example.com', note: 'customer called' },
    });
    // Step 2: the waiting agent got the approval.
    const waited = JSON.parse(readFileSync(waitOut, 'utf8'));
    expect(waited).toMatchObject({ id: asked.id, status: 'pending', review: { status: 'approved' } });
    // Step 5: a permit, then the confirmation.
    const [permit, confirmed] = parts
      .take!.replace(/}\s*{/g, '}\n{')
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(JSON.parse(permit!)).toMatchObject({ object: 'permit' });
    expect(JSON.parse(permit!).permit_token).toMatch(/^eyJ/);
    expect(JSON.parse(confirmed!)).toMatchObject({ id: asked.id, status: 'confirmed' });
  }, 120_000);
});
