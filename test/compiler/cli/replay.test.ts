/**
 * `authz replay` against a hand-made export served on 127.0.0.1: the decisions of
 * examples/support replayed against a copy with one policy edited; the window
 * (--since, from the service's Date header), --limit, pre-table and reviewed
 * decisions, the three formats, the exit codes and the failures.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replayCommand } from '../../../compiler/cli/replay.js';
import {
  compileSources,
  findYamlFiles,
  isPolicyFile,
  readSource,
  type EvaluationInput,
  type DecisionTable,
  evaluate,
} from '../../../compiler/index.js';
import { KEY, startExportServer, storedDecision, type ExportOptions, type ExportServer } from './export-server.js';
import { repoRoot } from './run-cli.js';

let dir: string;
/** The live policies: examples/support. */
const live: DecisionTable = compileSources(
  findYamlFiles([join(repoRoot, 'examples', 'support')], repoRoot)
    .filter(isPolicyFile)
    .map((f) => readSource(f, repoRoot)),
).table!;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'authz-replay-'));
  cpSync(join(repoRoot, 'examples', 'support'), join(dir, 'candidate'), { recursive: true });
  // The candidate: small chat refunds only up to USD 30 (was 50).
  const file = join(dir, 'candidate', 'policies.yaml');
  const text = readFileSync(file, 'utf8');
  expect(text).toContain('condition: "amount <= 50 && context.channel');
  writeFileSync(
    file,
    text.replace('condition: "amount <= 50 && context.channel', 'condition: "amount <= 30 && context.channel'),
  );
});

let server: ExportServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const chat = { channel: 'chat' };
const refund = (amount: number, context: Record<string, unknown> = chat): EvaluationInput => ({
  agent_id: 'support-bot-1',
  action: 'payments.refund',
  resource: 'order:1',
  amount,
  context,
});
const read: EvaluationInput = { agent_id: 'support-bot-2', action: 'orders.read', resource: 'order:7', context: chat };

/** Stored as the live policies decided it. */
const decided = (id: string, request: EvaluationInput) => storedDecision(id, request, evaluate(live, request));
/** Denied before the table with this reason. */
const preTable = (id: string, request: EvaluationInput, reason: string) =>
  storedDecision(id, request, { effect: 'deny', reason: reason as never, policy_id: null });

/** Eight decisions: three change with the candidate (one of them pre-table). */
const DECISIONS = [
  decided('dec_1', refund(40)), // allow -> deny policy.not_found
  decided('dec_2', refund(20)), // allow, unchanged
  decided('dec_3', refund(45, { channel: 'messenger' })), // allow -> deny
  decided('dec_4', read), // allow, unchanged
  preTable('dec_5', refund(40), 'agent.revoked'), // the table alone denies it too: no change
  preTable('dec_6', read, 'agent.revoked'), // the table alone would allow it: a change, pre-table
  { ...decided('dec_7', refund(80)), effect: 'deny', reason: 'review.denied', status: 'denied' }, // was review: unchanged
  preTable('dec_8', refund(45), 'budget.exceeded'), // the table alone denies it: no change
];

async function serve(decisions: object[], options: Partial<ExportOptions> = {}): Promise<ExportServer> {
  server = await startExportServer({ lines: decisions.length, line: (i) => JSON.stringify(decisions[i]), ...options });
  return server;
}

async function replay(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io = {
    out: (t: string) => void (out += `${t}\n`),
    err: (t: string) => void (err += `${t}\n`),
    isTTY: false,
    cwd: dir,
  };
  const code = await replayCommand(args, io, env);
  return { code, out, err };
}

const base = () => ['candidate', '--url', server!.url, '--key', KEY];

describe('authz replay', () => {
  it('prints only { replayed, changed, changes } in JSON, pre-table ones marked; exit 1', async () => {
    await serve(DECISIONS);
    const r = await replay([...base(), '--format', 'json', '--quiet']);
    expect(r.err).toBe('');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toEqual({
      replayed: 8,
      changed: 3,
      changes: [
        {
          decision_id: 'dec_1',
          from: { effect: 'allow', reason: 'policy.matched' },
          to: { effect: 'deny', reason: 'policy.not_found' },
        },
        {
          decision_id: 'dec_3',
          from: { effect: 'allow', reason: 'policy.matched' },
          to: { effect: 'deny', reason: 'policy.not_found' },
        },
        {
          decision_id: 'dec_6',
          from: { effect: 'deny', reason: 'agent.revoked' },
          to: { effect: 'allow', reason: 'policy.matched' },
          pre_table: true,
        },
      ],
    });
    expect(Object.keys(JSON.parse(r.out))).toEqual(['replayed', 'changed', 'changes']);
  });

  it('measures --since from the service clock (Date header), or takes an ISO time as it is', async () => {
    await serve(DECISIONS, { now: new Date('2026-11-21T10:00:00.000Z') });
    await replay([...base(), '--since', '7d', '--quiet']);
    await replay([...base(), '--since', '90m', '--quiet']);
    await replay([...base(), '--since', '2026-11-01T08:30:00+02:00', '--quiet']);
    await replay([...base(), '--quiet']); // default 7d
    expect(server!.requests).toEqual([
      '/v1/decisions?limit=1',
      `/v1/decisions/export?since=${encodeURIComponent('2026-11-14T10:00:00.000Z')}`,
      '/v1/decisions?limit=1',
      `/v1/decisions/export?since=${encodeURIComponent('2026-11-21T08:30:00.000Z')}`,
      `/v1/decisions/export?since=${encodeURIComponent('2026-11-01T06:30:00.000Z')}`,
      '/v1/decisions?limit=1',
      `/v1/decisions/export?since=${encodeURIComponent('2026-11-14T10:00:00.000Z')}`,
    ]);
  });

  it("falls back to this machine's clock, with a warning, when the service sends no Date", async () => {
    await serve(DECISIONS, { noDate: true });
    const before = Date.now();
    const r = await replay([...base(), '--since', '1h', '--quiet']);
    expect(r.err).toContain('warning: the service sent no Date header');
    const since = new URL(server!.requests[1]!, 'http://x').searchParams.get('since')!;
    // The window ends at this machine's time when the CLI ran (a clock reading, not a duration): between the readings before and after it.
    const end = Date.parse(since) + 3_600_000;
    const after = Date.now();
    expect(before <= end && end <= after, `${new Date(end).toISOString()} not within the run`).toBe(true);
  });

  it('counts only the newest N with --limit (the export comes oldest first)', async () => {
    await serve(DECISIONS);
    const r = await replay([...base(), '--limit', '5', '--format', 'json', '--quiet']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toEqual({
      replayed: 5,
      changed: 1,
      changes: [expect.objectContaining({ decision_id: 'dec_6', pre_table: true })],
    });
    const last2 = await replay([...base(), '--limit', '2', '--format', 'json', '--quiet']);
    expect(JSON.parse(last2.out)).toEqual({ replayed: 2, changed: 0, changes: [] });
    expect(last2.code).toBe(0);
    const text = await replay([...base(), '--limit', '2']);
    expect(text.out).toMatch(
      /^replayed 2 decisions \(the newest 2 of 8\) of the last 7d \(since 2026-11-14T10:00:00\.000Z by the service's clock\) against candidate: no change$/m,
    );
  });

  it('summarises in text: transitions with samples, agents and actions, the pre-table note; progress on stderr', async () => {
    const many = Array.from({ length: 25_000 }, (_, i) => ({ ...DECISIONS[i % DECISIONS.length]!, id: `dec_${i}` }));
    await serve(many);
    const r = await replay(base());
    expect(r.code).toBe(1);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toBe(
      "replayed 25000 decisions of the last 7d (since 2026-11-14T10:00:00.000Z by the service's clock) against candidate: 9375 would change",
    );
    expect(lines[1]).toBe('changes (from -> to):');
    expect(lines[2]).toBe(
      '  allow (policy.matched) -> deny (policy.not_found): 6250   e.g. dec_0, dec_2, dec_8, dec_10, dec_16',
    );
    expect(lines[3]).toBe(
      '  deny (agent.revoked) -> allow (policy.matched): 3125 [pre-table: denied before the table, replayed through it alone]   e.g. dec_5, dec_13, dec_21, dec_29, dec_37',
    );
    expect(lines[4]).toBe('agents most affected: support-bot-1 (6250), support-bot-2 (3125)');
    expect(lines[5]).toBe('actions most affected: payments.refund (6250), orders.read (3125)');
    expect(lines[6]).toMatch(/^9375 of them were denied before the table \(agent\.revoked, budget\.exceeded\)/);
    // A progress line every 10,000 decisions (and one each second the count moves, on a slow machine).
    const progress = r.err.trim().split('\n');
    for (const l of progress) expect(l).toMatch(/^replay: \d+ decisions replayed, \d+ would change$/);
    expect(progress.filter((l) => /: \d+0000 decisions/.test(l))).toEqual([
      'replay: 10000 decisions replayed, 3750 would change',
      'replay: 20000 decisions replayed, 7500 would change',
    ]);
  });

  it('annotates for GitHub, one warning per transition', async () => {
    await serve(DECISIONS);
    const r = await replay([...base(), '--format', 'github', '--quiet']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /^::warning title=authz replay::2 of 8 replayed decisions would go from allow \(policy\.matched\) to deny \(policy\.not_found\) \(e\.g\. dec_1, dec_3\)$/m,
    );
    expect(r.out).toMatch(
      /^::warning title=authz replay::1 of 8 replayed decisions would go from deny \(agent\.revoked\) to allow \(policy\.matched\) \[pre-table.*\(e\.g\. dec_6\)$/m,
    );
  });

  it('exits 0 when nothing would change (the live policies themselves as the candidate)', async () => {
    const live = join(repoRoot, 'examples', 'support');
    await serve(DECISIONS);
    // Only decisions denied before the table remain: those the table alone would let through.
    const r = await replay([live, '--url', server!.url, '--key', KEY, '--format', 'json', '--quiet']);
    expect(
      JSON.parse(r.out).changes.map((c: { decision_id: string; pre_table?: boolean }) => [c.decision_id, c.pre_table]),
    ).toEqual([
      ['dec_5', true],
      ['dec_6', true],
      ['dec_8', true],
    ]);
    await server!.close();
    await serve(DECISIONS.filter((d) => !['dec_5', 'dec_6', 'dec_8'].includes(d.id as string)));
    const again = await replay([live, '--url', server!.url, '--key', KEY, '--quiet']);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/^replayed 5 decisions .*: no change$/m);
  });

  it('reads a bundle, and the key and URL from AUTHZ_API_KEY and AUTHZ_URL', async () => {
    await serve(DECISIONS);
    const { main } = await import('../../../compiler/cli/main.js');
    expect(
      main(['compile', 'candidate', '-o', 'candidate.json'], { out: () => {}, err: () => {}, isTTY: false, cwd: dir }),
    ).toBe(0);
    const r = await replay(['candidate.json', '--format', 'json', '--quiet'], {
      AUTHZ_API_KEY: KEY,
      AUTHZ_URL: `${server!.url}/`,
    });
    expect(JSON.parse(r.out)).toMatchObject({ replayed: 8, changed: 3 });
  });

  it('exits 2, saying why, when it cannot replay', async () => {
    const { url } = await serve(DECISIONS);
    const wrongKey = await replay(['candidate', '--url', url, '--key', 'svc_test_sk_wrong']);
    expect(wrongKey).toMatchObject({ code: 2, out: '' });
    expect(wrongKey.err).toContain('GET /v1/decisions answered 401 auth.invalid_key: The API key is not valid.');
    expect((await replay(['candidate', '--url', url])).code).toBe(2); // no key
    expect((await replay([...base(), '--since', 'last week'])).code).toBe(2);
    // A date that does not exist is refused (Date.parse would read 2026-02-30 as March 2), as are years outside 1970 to 9999.
    for (const since of [
      '2026-02-30',
      '2026-02-29T10:00',
      '2026-04-31T00:00:00Z',
      '2026-01-01T24:00',
      '1969-12-31T23:59:59Z',
      '0000-01-01',
    ]) {
      const refused = await replay([...base(), '--since', since]);
      expect(refused, since).toMatchObject({ code: 2, out: '' });
      expect(refused.err, since).toContain(`--since must be a duration (30m, 12h, 7d) or an ISO time, not ${since}`);
    }
    expect((await replay([...base(), '--limit', '0'])).code).toBe(2);
    expect((await replay([...base(), '--format', 'yaml'])).code).toBe(2);
    expect((await replay(['missing', '--url', url, '--key', KEY])).code).toBe(2);
    const unreachable = await replay(['candidate', '--url', 'http://127.0.0.1:1', '--key', KEY]);
    expect(unreachable.code).toBe(2);
    expect(unreachable.err).toContain('cannot reach http://127.0.0.1:1');
    await server!.close();

    await serve([DECISIONS[0]!, { id: 'dec_x', agent_id: 'a' }]);
    const malformed = await replay([...base(), '--quiet']);
    expect(malformed.code).toBe(2);
    expect(malformed.err).toContain('line 2 of the export is not a decision: dec_x: no valid action');
    await server!.close();

    server = await startExportServer({
      lines: 2,
      line: (i) => (i === 0 ? JSON.stringify(DECISIONS[0]) : '{"id": "dec_'),
    });
    expect((await replay([...base(), '--quiet'])).err).toContain('line 2 of the export is not JSON');
    await server!.close();

    await serve([], {
      fail: {
        status: 403,
        body: JSON.stringify({ error: { code: 'auth.scope_insufficient', message: 'needs decisions:read' } }),
      },
    });
    const scope = await replay([...base(), '--since', '2026-11-01']);
    expect(scope.code).toBe(2);
    expect(scope.err).toContain('GET /v1/decisions/export answered 403 auth.scope_insufficient: needs decisions:read');
  });
});
