/**
 * History in conditions, the service's half (docs/history.md), over HTTP on
 * both stores: exactness under concurrency (200 concurrent decisions against
 * `history.count('x.go', '1h') < 5` give exactly 5 allows; ten concurrent
 * reviews awaiting approval cannot all pass a cap of three), windows sliding
 * on the test clock, each scope, MATCH on resource and on context.*, the 400
 * for a missing session or user, what counts (rejected and expired decisions
 * stay counted, confirm sets the amount a sum adds, reviews denied move to
 * history.denied), preview recording nothing, AuthZEN decisions counted,
 * shadow policies reading the same history, metadata.history, and the
 * upkeep's pruning.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../../compiler/policy/types.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { agent, decide, expectError, postDecision, review } from '../helpers/kit.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { pruneHistory, readHistory } from '../../runtime/store/history.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { replayCommand } from '../../compiler/cli/replay.js';

type PolicyInput = Partial<Policy> & Pick<Policy, 'effect' | 'actions'>;

describe.each(STORE_KINDS)('history in conditions (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  const install = (policies: PolicyInput[]) => rt.setPolicies(policies);
  const effects = async (bodies: object[]) =>
    (await Promise.all(bodies.map((b) => decide(rt, b)))).map((d) => d.effect);
  const count = (list: string[], effect: string) => list.filter((e) => e === effect).length;
  const entriesOf = async (decisionId: string) =>
    rt.store.sql<Array<{ kind: string }>>`select kind from history_entries where decision_id = ${decisionId}`;

  it("200 concurrent decisions against history.count('x.go', '1h') < 5 in one session: exactly 5 allows, and metadata.history says what each read", async () => {
    await install([{ id: 'pol_go', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 5" }]);
    const session = agent('race');
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        decide(rt, { agent_id: agent(`racer${i % 7}`), session_id: session, action: 'x.go' }),
      ),
    );
    expect(
      count(
        answers.map((a) => a.effect),
        'allow',
      ),
    ).toBe(5);
    // Each allow read a count below 5, each deny 5 (the denials never count).
    const seen = answers.map((a) => [a.effect, (a.metadata as JsonObject).history[0].value] as const);
    expect(
      seen
        .filter(([e]) => e === 'allow')
        .map(([, v]) => v)
        .sort(),
    ).toEqual([0, 1, 2, 3, 4]);
    for (const [e, v] of seen) if (e === 'deny') expect(v).toBe(5);
    expect((answers[0]!.metadata as JsonObject).history).toEqual([
      { fn: 'count', actions: ['x.go'], window: '1h', scope: 'session', value: expect.any(Number) },
    ]);
    // GET answers it too (stored with the decision).
    const stored = await rt.getOk(`/v1/decisions/${answers[0]!.id}`);
    expect(stored.metadata.history).toEqual((answers[0]!.metadata as JsonObject).history);
  });

  it('ten concurrent reviews awaiting approval cannot all pass a cap of three; a denied review moves to history.denied', async () => {
    await install([
      {
        id: 'pol_refund',
        effect: 'review',
        actions: ['payments.refund'],
        approval: { required: true, timeout_seconds: 600 },
        condition: "history.count('payments.refund', '1d', 'agent') < 3",
      },
      {
        id: 'pol_lockout',
        effect: 'allow',
        actions: ['payments.check'],
        condition: "history.denied('payments.refund', '1d', 'agent') < 1",
      },
    ]);
    const a = agent('reviews');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => decide(rt, { agent_id: a, action: 'payments.refund' })),
    );
    const awaiting = answers.filter((d) => d.status === 'awaiting_approval');
    expect(awaiting).toHaveLength(3);
    expect(answers.filter((d) => d.effect === 'deny')).toHaveLength(7);
    // The 7 denials count for history.denied: the agent is locked out of payments.check.
    expect((await decide(rt, { agent_id: a, action: 'payments.check' })).effect).toBe('deny');
    // Another agent: nothing denied, and denying its awaiting review moves the entry to 'denied'.
    const b = agent('reviews');
    const pending = await decide(rt, { agent_id: b, action: 'payments.refund' });
    expect(pending.status).toBe('awaiting_approval');
    expect((await decide(rt, { agent_id: b, action: 'payments.check' })).effect).toBe('allow');
    const reviewer = await rt.keyWith(['reviews:write']);
    await review(rt, reviewer, pending.id, 'deny');
    expect(await entriesOf(pending.id)).toEqual([{ kind: 'denied' }]);
    expect((await decide(rt, { agent_id: b, action: 'payments.check' })).effect).toBe('deny');
  });

  it('windows slide on the service clock: a decision counts while its evaluated_at is within the window', async () => {
    await install([
      { id: 'pol_w', effect: 'allow', actions: ['w.go'], condition: "history.count('w.go', '10m', 'agent') < 2" },
    ]);
    const a = agent('window');
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['allow']);
    rt.clock.advance(300);
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['allow']);
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['deny']);
    // Exactly 10 minutes after the first it still counts (now - window <= evaluated_at); a millisecond later it does not.
    rt.clock.advance(300);
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['deny']);
    rt.clock.set(rt.clock.now() + 1);
    const d = await decide(rt, { agent_id: a, action: 'w.go' });
    expect([d.effect, (d.metadata as JsonObject).history[0].value]).toEqual(['allow', 1]);
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['deny']);
    // The one at 300 s counts until 900 s.
    rt.clock.advance(299);
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['deny']);
    rt.clock.advance(1);
    expect(await effects([{ agent_id: a, action: 'w.go' }])).toEqual(['allow']);
  });

  it('each scope: session (across agents), agent, user (across agents), environment', async () => {
    await install([
      { id: 'pol_s', effect: 'allow', actions: ['s.go'], condition: "history.count('s.go', '1h') < 1" },
      { id: 'pol_a', effect: 'allow', actions: ['a.go'], condition: "history.count('a.go', '1h', 'agent') < 1" },
      { id: 'pol_u', effect: 'allow', actions: ['u.go'], condition: "history.count('u.go', '1h', 'user') < 1" },
      { id: 'pol_e', effect: 'allow', actions: ['e.go'], condition: "history.count('e.go', '1h', 'environment') < 2" },
    ]);
    const [a1, a2] = [agent('scope'), agent('scope')];
    const [s1, s2, u1, u2] = [agent('s'), agent('s'), agent('u'), agent('u')];
    // Session: a second agent in the same session is counted, another session is not.
    expect(await effects([{ agent_id: a1, session_id: s1, action: 's.go' }])).toEqual(['allow']);
    expect(await effects([{ agent_id: a2, session_id: s1, action: 's.go' }])).toEqual(['deny']);
    expect(await effects([{ agent_id: a1, session_id: s2, action: 's.go' }])).toEqual(['allow']);
    // Agent: across sessions, not across agents.
    expect(await effects([{ agent_id: a1, session_id: s1, action: 'a.go' }])).toEqual(['allow']);
    expect(await effects([{ agent_id: a1, session_id: s2, action: 'a.go' }])).toEqual(['deny']);
    expect(await effects([{ agent_id: a2, action: 'a.go' }])).toEqual(['allow']);
    // User: across agents and sessions.
    expect(await effects([{ agent_id: a1, on_behalf_of: u1, action: 'u.go' }])).toEqual(['allow']);
    expect(await effects([{ agent_id: a2, session_id: s2, on_behalf_of: u1, action: 'u.go' }])).toEqual(['deny']);
    expect(await effects([{ agent_id: a2, on_behalf_of: u2, action: 'u.go' }])).toEqual(['allow']);
    // Environment: everyone; the live environment and another account are apart.
    expect(
      await effects([
        { agent_id: a1, action: 'e.go' },
        { agent_id: a2, action: 'e.go' },
      ]),
    ).toEqual(['allow', 'allow']);
    expect(await effects([{ agent_id: agent('scope'), action: 'e.go' }])).toEqual(['deny']);
    await rt.setPolicies(
      [
        {
          id: 'pol_e',
          effect: 'allow',
          actions: ['e.go'],
          condition: "history.count('e.go', '1h', 'environment') < 2",
        },
      ],
      'live',
    );
    expect(json(await postDecision(rt, { agent_id: a1, action: 'e.go' }, rt.liveKey)).effect).toBe('allow');
  });

  it('MATCH on resource and on context.*: only earlier decisions with equal values count; a field the request lacks matches nothing', async () => {
    await install([
      { id: 'pol_approve', effect: 'allow', actions: ['claims.approve'] },
      {
        id: 'pol_pay',
        effect: 'allow',
        actions: ['claims.pay'],
        condition: "history.exists('claims.approve', '1h', 'session', ['resource'])",
      },
      {
        id: 'pol_mail',
        effect: 'allow',
        actions: ['mail.send'],
        condition: "history.count('mail.send', '1h', 'session', ['context.to']) < 1",
      },
    ]);
    const s = agent('match');
    const a = agent('match');
    expect(await effects([{ agent_id: a, session_id: s, action: 'claims.pay', resource: 'claim:1' }])).toEqual([
      'deny',
    ]);
    expect(await effects([{ agent_id: a, session_id: s, action: 'claims.approve', resource: 'claim:1' }])).toEqual([
      'allow',
    ]);
    expect(await effects([{ agent_id: a, session_id: s, action: 'claims.pay', resource: 'claim:1' }])).toEqual([
      'allow',
    ]);
    expect(await effects([{ agent_id: a, session_id: s, action: 'claims.pay', resource: 'claim:2' }])).toEqual([
      'deny',
    ]);
    // No resource: matches nothing (not even an approval without one).
    expect(await effects([{ agent_id: a, session_id: s, action: 'claims.approve' }])).toEqual(['allow']);
    const none = await decide(rt, { agent_id: a, session_id: s, action: 'claims.pay' });
    expect([none.effect, (none.metadata as JsonObject).history]).toEqual([
      'deny',
      [{ fn: 'exists', actions: ['claims.approve'], window: '1h', scope: 'session', match: ['resource'], value: 0 }],
    ]);
    // context.to: one mail per address; nested values compare as JSON.
    expect(
      await effects([{ agent_id: a, session_id: s, action: 'mail.send', context: { to: 'x@example.com' } }]),
    ).toEqual(['allow']);
    expect(
      await effects([{ agent_id: a, session_id: s, action: 'mail.send', context: { to: 'x@example.com' } }]),
    ).toEqual(['deny']);
    expect(
      await effects([{ agent_id: a, session_id: s, action: 'mail.send', context: { to: 'y@example.com' } }]),
    ).toEqual(['allow']);
    // Without context.to: the count is 0 (nothing matches), every time.
    expect(await effects([{ agent_id: a, session_id: s, action: 'mail.send' }])).toEqual(['allow']);
    expect(await effects([{ agent_id: a, session_id: s, action: 'mail.send', context: {} }])).toEqual(['allow']);
  });

  it('an entry is indexed for the scopes whose functions see it; named actions and patterns, and MATCH on a list, count what the reference counts', async () => {
    await install([
      { id: 'pol_sa', effect: 'allow', actions: ['sc.a'], condition: "history.count('sc.a', '1h') < 100" },
      { id: 'pol_sb', effect: 'allow', actions: ['sc.b'], condition: "history.count('sc.*', '1h', 'agent') < 100" },
      {
        id: 'pol_sc',
        effect: 'allow',
        actions: ['sc.c'],
        condition: "history.count('sc.c', '1h', 'session', ['context.tags']) < 100",
      },
    ]);
    const a = agent('scopes');
    const s = agent('scopes-session');
    const scopesOf = async (decisionId: string) =>
      (
        await rt.store.sql<
          Array<{ scopes: number }>
        >`select scopes from history_entries where decision_id = ${decisionId}`
      ).map((r) => r.scopes);
    const historyOf = (d: { metadata?: unknown }) => (d.metadata as JsonObject).history[0].value as number;
    // sc.a: seen by the session function (1) and the agent pattern (2); sc.b by the agent pattern alone.
    const first = await decide(rt, { agent_id: a, session_id: s, action: 'sc.a' });
    expect(await scopesOf(first.id)).toEqual([3]);
    const second = await decide(rt, { agent_id: a, session_id: s, action: 'sc.a' });
    expect(historyOf(second)).toBe(1);
    const b = await decide(rt, { agent_id: a, action: 'sc.b' });
    expect([historyOf(b), ...(await scopesOf(b.id))]).toEqual([2, 2]);
    // A list compares whole: ['x', 'y'] is not ['x'] (containment would count it).
    const tagged = (tags: string[]) => decide(rt, { agent_id: a, session_id: s, action: 'sc.c', context: { tags } });
    expect(historyOf(await tagged(['x', 'y']))).toBe(0);
    const again = await tagged(['x', 'y']);
    expect([historyOf(again), ...(await scopesOf(again.id))]).toEqual([1, 3]);
    expect(historyOf(await tagged(['x']))).toBe(0);
    expect(historyOf(await tagged(['x', 'y']))).toBe(2);
    // The agent pattern saw every one of them.
    expect(historyOf(await decide(rt, { agent_id: a, action: 'sc.b' }))).toBe(7);
    // Each scope's index holds only its bit's entries (migration 024's partial indexes): no session bit without a session.
    const [wrong] = await rt.store.sql<Array<{ n: number }>>`
      select count(*)::int as n from history_entries where agent_id = ${a} and session_id is null and (scopes & 1) <> 0`;
    expect(wrong!.n).toBe(0);
  });

  it('400 validation.missing_field for a request a candidate session or user probe applies to without that field; other actions are unaffected', async () => {
    await install([
      { id: 'pol_s', effect: 'allow', actions: ['s.go'], condition: "history.count('s.go', '1h') < 3" },
      {
        id: 'pol_u',
        effect: 'allow',
        actions: ['u.go'],
        condition: "history.sum('u.go', '1d', 'user') + amount <= 100",
      },
      { id: 'pol_free', effect: 'allow', actions: ['free.go'] },
    ]);
    const a = agent('missing');
    const s = expectError(await postDecision(rt, { agent_id: a, action: 's.go' }), 400, 'validation.missing_field');
    expect(s.details).toEqual([{ path: '/session_id', message: expect.stringContaining('session_id is required') }]);
    const u = expectError(
      await postDecision(rt, { agent_id: a, session_id: 'x', action: 'u.go', amount: 5 }),
      400,
      'validation.missing_field',
    );
    expect(u.details![0]!.path).toBe('/on_behalf_of');
    expect(await effects([{ agent_id: a, action: 'free.go' }])).toEqual(['allow']);
    // Preview says the same.
    const preview = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions/preview',
      payload: { agent_id: a, action: 's.go' },
    });
    expectError(preview, 400, 'validation.missing_field');
  });

  it('what counts: rejected and expired decisions stay counted; history.sum adds confirmed_amount once confirmed, else amount', async () => {
    await install([
      {
        id: 'pol_buy',
        effect: 'allow',
        actions: ['shop.buy'],
        condition: "history.sum('shop.buy', '1d', 'user') + amount <= 100",
      },
      { id: 'pol_n', effect: 'allow', actions: ['n.go'], condition: "history.count('n.go', '1d', 'agent') < 2" },
    ]);
    const u = agent('user');
    const a = agent('buyer');
    const first = await decide(rt, { agent_id: a, on_behalf_of: u, action: 'shop.buy', amount: 60 });
    expect(first.effect).toBe('allow');
    expect((await decide(rt, { agent_id: a, on_behalf_of: u, action: 'shop.buy', amount: 50 })).effect).toBe('deny');
    // Confirmed at 30: the sum is 30 from now on.
    const confirmed = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/decisions/${first.id}/confirm`,
      payload: { amount: 30 },
    });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    const second = await decide(rt, { agent_id: agent('buyer'), on_behalf_of: u, action: 'shop.buy', amount: 50 });
    expect([second.effect, (second.metadata as JsonObject).history[0].value]).toEqual(['allow', 30]);
    // Rejecting does not take it back (the agent holding the key could lower its own count).
    expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${second.id}/reject` })).statusCode).toBe(
      200,
    );
    expect((await decide(rt, { agent_id: a, on_behalf_of: u, action: 'shop.buy', amount: 21 })).effect).toBe('deny');
    // Expired (ttl 1 s, never confirmed): still counted.
    const b = agent('expiry');
    expect((await decide(rt, { agent_id: b, action: 'n.go', ttl_seconds: 1 })).effect).toBe('allow');
    const rejected = await decide(rt, { agent_id: b, action: 'n.go' });
    expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${rejected.id}/reject` })).statusCode).toBe(
      200,
    );
    rt.clock.advance(5);
    expect(await effects([{ agent_id: b, action: 'n.go' }])).toEqual(['deny']);
  });

  it('preview evaluates history the same way and records nothing; AuthZEN decisions are counted; shadow policies read the same history', async () => {
    await install([
      { id: 'pol_p', effect: 'allow', actions: ['p.go'], condition: "history.count('p.go', '1h', 'agent') < 2" },
      {
        id: 'pol_shadow',
        effect: 'deny',
        state: 'shadow',
        actions: ['p.go'],
        condition: "history.count('p.go', '1h', 'agent') >= 1",
      },
    ]);
    const a = agent('preview');
    const preview = async () =>
      json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions/preview',
          payload: { agent_id: a, action: 'p.go' },
        }),
      );
    for (let i = 0; i < 3; i++)
      expect(await preview()).toMatchObject({ effect: 'allow', history: [{ fn: 'count', value: 0 }] });
    const [row] = await rt.store.sql<
      Array<{ n: number }>
    >`select count(*)::int as n from history_entries where agent_id = ${a}`;
    expect(row!.n).toBe(0);
    // Through AuthZEN: counted like any decision.
    const evaluation = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/access/v1/evaluation',
      payload: { subject: { type: 'agent', id: a }, action: { name: 'p.go' }, resource: { type: 'x', id: '1' } },
    });
    expect(evaluation.statusCode, evaluation.body).toBe(200);
    expect(json(evaluation).decision).toBe(true);
    const d = await decide(rt, { agent_id: a, action: 'p.go' });
    // Enforced: allowed (1 < 2); the shadow deny reads the same count (1 >= 1) and diverges.
    expect([d.effect, (d.metadata as JsonObject).history[0].value, (d.metadata as JsonObject).shadow?.effect]).toEqual([
      'allow',
      1,
      'deny',
    ]);
    expect(await preview()).toMatchObject({ effect: 'deny', history: [{ value: 2 }] });
  });

  it("a decision no probe can see leaves nothing; an entry counts nowhere past the longest window, and the upkeep prunes the gate's", async () => {
    await install([
      { id: 'pol_k', effect: 'allow', actions: ['k.go'], condition: "history.count('k.go', '2h', 'session') < 100" },
      // A rate limit: decided through the limits gate, whose entries are rows of their own (migration 029).
      {
        id: 'pol_kg',
        effect: 'allow',
        actions: ['kg.go'],
        condition: "history.count('kg.go', '2h', 'session') < 100",
        rate_limit: { per_minute: 1000 },
      },
      { id: 'pol_other', effect: 'allow', actions: ['other.go'] },
    ]);
    const a = agent('prune');
    const noSession = await decide(rt, { agent_id: a, action: 'other.go' });
    expect(await entriesOf(noSession.id)).toEqual([]);
    // Decided from a lease: its entry is columns of its decision's row; decided through the gate: a row of its own.
    const leased = await decide(rt, { agent_id: a, session_id: 'sess-prune', action: 'k.go' });
    const gated = await decide(rt, { agent_id: a, session_id: 'sess-prune-gate', action: 'kg.go' });
    expect(await entriesOf(leased.id)).toEqual([{ kind: 'counted' }]);
    expect(await entriesOf(gated.id)).toEqual([{ kind: 'counted' }]);
    const gateRows = () =>
      rt.store
        .sql`select decision_id from history_gate_entries where decision_id in ${rt.store.sql([leased.id, gated.id])}`;
    expect(await gateRows()).toEqual([{ decision_id: gated.id }]);
    // A longer window than the policies had when the entries were written still sees nothing past their keep_until.
    const counts = () =>
      readHistory(
        rt.store.sql,
        rt.accountId,
        'test',
        ['sess-prune', 'sess-prune-gate'].map((key) => ({
          scope: 'session' as const,
          key,
          actions: ['k.go', 'kg.go'],
          window_s: 86_400,
          measure: 'count' as const,
          match: {},
        })),
        rt.clock.now(),
      );
    rt.clock.advance(7199);
    await pruneHistory(rt.store.sql, rt.clock.now());
    expect(await gateRows()).toHaveLength(1);
    expect(await counts()).toEqual([1, 1]);
    rt.clock.advance(2);
    expect(await counts()).toEqual([0, 0]);
    await rt.background.log.runOnce();
    expect(await gateRows()).toEqual([]);
    expect(await counts()).toEqual([0, 0]);
  });

  it('authz replay replays with the history the stored decisions had, in order, the window reaching back before --since', async () => {
    await install([
      { id: 'pol_cap', effect: 'allow', actions: ['r.go'], condition: "history.count('r.go', '1h') < 2" },
    ]);
    const s = agent('replay');
    const d0 = await decide(rt, { agent_id: 'bot', session_id: s, action: 'r.go' });
    rt.clock.advance(2400);
    const since = new Date(rt.clock.now()).toISOString();
    const d1 = await decide(rt, { agent_id: 'bot', session_id: s, action: 'r.go' });
    const d2 = await decide(rt, { agent_id: 'bot', session_id: s, action: 'r.go' });
    expect([d0.effect, d1.effect, d2.effect]).toEqual(['allow', 'allow', 'deny']);
    rt.clock.advance(1);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(rt.app.server.address() as AddressInfo).port}`;
    const replay = async (condition: string) => {
      const dir = mkdtempSync(join(tmpdir(), 'history-replay-'));
      writeFileSync(
        join(dir, 'policies.yaml'),
        `policies:\n  - id: pol_cap\n    effect: allow\n    actions: [r.go]\n    condition: "${condition}"\n`,
      );
      let out = '';
      let err = '';
      const io = {
        out: (t: string) => void (out += `${t}\n`),
        err: (t: string) => void (err += `${t}\n`),
        isTTY: false,
        cwd: dir,
      };
      const code = await replayCommand(
        [dir, '--url', url, '--key', rt.testKey, '--since', since, '--format', 'json', '--quiet'],
        io,
        {},
      );
      expect(code, err).toBeLessThan(2);
      return JSON.parse(out) as {
        replayed: number;
        changed: number;
        changes: Array<{ decision_id: string; from: object; to: object }>;
      };
    };
    // The same policy: d1 reads d0 (before --since, still in the window), d2 reads both: nothing changes.
    const same = await replay("history.count('r.go', '1h') < 2");
    expect(same.replayed).toBeGreaterThanOrEqual(2);
    expect(same.changes.filter((c) => [d0.id, d1.id, d2.id].includes(c.decision_id))).toEqual([]);
    // A cap of 3: d2 (count 2) would be allowed; d0 is not replayed (before --since).
    const looser = await replay("history.count('r.go', '1h') < 3");
    expect(looser.changes.filter((c) => [d0.id, d1.id, d2.id].includes(c.decision_id))).toEqual([
      {
        decision_id: d2.id,
        from: { effect: 'deny', reason: 'policy.not_found' },
        to: { effect: 'allow', reason: 'policy.matched' },
      },
    ]);
  });
});
