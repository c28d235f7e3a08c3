/**
 * History leases in the decision path (issue 46, runtime/history/leases.ts),
 * over HTTP on both stores: a session's decisions are decided from the lease
 * of its key (a history_leases row held by this process, the entry written
 * with the decision); whatever else changes the key's history ends the lease
 * and the counts stay exact: a decision through the limits gate, a confirmed
 * amount, a review denied, another holder taking the lease (the write fails
 * its epoch check and is decided again through the gate); the upkeep renews
 * held leases, drops a lease whose epoch moved and lets idle ones go;
 * AUTHZ_HISTORY_LEASES=0 writes no lease and stays exact. Two holders:
 * test/runtime/history-leases-processes.test.ts.
 *
 * The cooldown before a process takes a key again (LEASE_DEFAULTS.cooldownMs)
 * runs on performance.now(): the tests move it forward instead of waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryLeases, LEASE_DEFAULTS } from '../../runtime/history/leases.js';
import { takeLease } from '../../runtime/store/history-leases.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { agent, decide, review } from '../helpers/kit.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';
import {
  countedOf,
  entriesOf,
  leaseOf,
  leasesOf,
  performanceClock,
  read,
  sessionKey,
  sessionPlan,
  valueOf,
} from './helpers/history-leases.js';

/** A renewal long ago (the upkeep renews to the database's now). */
const STALE = Date.parse('2000-01-01T00:00:00Z');
const clock = performanceClock();
/** The process's monotonic clock moves past the lease cooldown: it takes the keys it let go of again. */
const pastCooldown = () => clock.advance(LEASE_DEFAULTS.cooldownMs + 1);

describe.each(STORE_KINDS)('history leases (%s)', (kind) => {
  let rt: TestRuntime;
  let leases: HistoryLeases;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    leases = leasesOf(rt)!;
  });
  afterAll(() => rt.close());

  const go = (session: string, action = 'x.go', extra: object = {}) =>
    decide(rt, { agent_id: agent('lease'), session_id: session, action, ...extra });

  it("a session's decisions hold the lease of its key: the row names this process, each entry is written with its decision, the epoch stays", async () => {
    await rt.setPolicies([
      { id: 'pol_go', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 3" },
    ]);
    const s = agent('held');
    const first = await go(s);
    expect(read(first)).toEqual(['allow', 0]);
    const lease = await leaseOf(rt, s);
    expect(lease).toMatchObject({ holder: leases.holder, epoch: expect.stringMatching(/^\d+$/) });
    expect(leases.holder).toMatch(/^proc_/);
    expect(await entriesOf(rt, s)).toEqual([
      { decision_id: first.id, kind: 'counted', amount: null, confirmed_amount: null },
    ]);
    // The next ones under the same epoch: no gate (which would end the lease) decided them.
    const rest = [await go(s), await go(s), await go(s)];
    expect(rest.map(read)).toEqual([
      ['allow', 1],
      ['allow', 2],
      ['deny', 3],
    ]);
    expect(await leaseOf(rt, s)).toMatchObject({ holder: leases.holder, epoch: lease!.epoch });
    // A denied decision leaves no entry (no history.denied probe sees it).
    expect((await entriesOf(rt, s)).map((e) => e.decision_id)).toEqual([first.id, rest[0]!.id, rest[1]!.id].sort());
  });

  it('the upkeep renews held leases, drops from memory a lease whose epoch moved in the store, and lets idle ones go', async () => {
    await rt.setPolicies([
      { id: 'pol_go', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 9" },
    ]);
    const s = agent('upkeep');
    await go(s);
    await rt.store.sql`update history_leases set renewed_at = ${new Date(STALE)} where lock_key = ${sessionKey(rt, s)}`;
    const before = leases.size;
    await leases.upkeep(rt.clock.now());
    const renewed = (await leaseOf(rt, s))!;
    expect(renewed.holder).toBe(leases.holder);
    expect(renewed.renewed_at.getTime()).toBeGreaterThan(STALE);
    expect(leases.size).toBe(before);
    // The epoch moved (as another holder's take or the gate would move it): the upkeep forgets the key ...
    const [moved] = await rt.store.sql<Array<{ epoch: string }>>`update history_leases
      set epoch = nextval('history_lease_epochs') where lock_key = ${sessionKey(rt, s)} returning epoch::text as epoch`;
    await leases.upkeep(rt.clock.now());
    expect(leases.size).toBe(before - 1);
    // ... so the next decision takes it again (a new epoch, read from the store) rather than writing under the old one.
    expect(read(await go(s))).toEqual(['allow', 1]);
    const retaken = (await leaseOf(rt, s))!;
    expect(retaken.holder).toBe(leases.holder);
    expect(BigInt(retaken.epoch)).toBeGreaterThan(BigInt(moved!.epoch));
    // Idle past LEASE_DEFAULTS.idleMs: let go (no holder, a new epoch), and no longer in memory.
    clock.advance(LEASE_DEFAULTS.idleMs + 1);
    await leases.upkeep(rt.clock.now());
    expect(leases.size).toBe(0);
    const released = (await leaseOf(rt, s))!;
    expect(released.holder).toBeNull();
    expect(released.epoch).not.toBe(retaken.epoch);
    expect(read(await go(s))).toEqual(['allow', 2]);
  });

  it('a decision through the limits gate on the same session ends the lease; the counts stay exact, the lease taken again', async () => {
    await rt.setPolicies([
      { id: 'pol_go', effect: 'allow', actions: ['x.go'], condition: "history.count(['x.go', 'y.go'], '1h') < 5" },
      {
        id: 'pol_limited',
        effect: 'allow',
        actions: ['y.go'],
        rate_limit: { per_minute: 1000 },
        condition: "history.count(['x.go', 'y.go'], '1h') < 5",
      },
    ]);
    const s = agent('gate');
    expect([read(await go(s)), read(await go(s))]).toEqual([
      ['allow', 0],
      ['allow', 1],
    ]);
    const held = (await leaseOf(rt, s))!;
    expect(held.holder).toBe(leases.holder);
    // A rate limit: the gate decides it, under the key's lock.
    expect(read(await go(s, 'y.go'))).toEqual(['allow', 2]);
    const ended = (await leaseOf(rt, s))!;
    expect(ended.holder).toBeNull();
    expect(ended.epoch).not.toBe(held.epoch);
    // Cooling down: the gate decides the next one; then the lease is taken again, with the gate's entries.
    expect(read(await go(s))).toEqual(['allow', 3]);
    pastCooldown();
    expect(read(await go(s))).toEqual(['allow', 4]);
    expect(await leaseOf(rt, s)).toMatchObject({ holder: leases.holder });
    expect([read(await go(s)), read(await go(s, 'y.go'))]).toEqual([
      ['deny', 5],
      ['deny', 5],
    ]);
    expect(await countedOf(rt, s)).toHaveLength(5);
  });

  it('confirming a decision with an amount ends the lease of its keys; history.sum then adds the confirmed amount', async () => {
    await rt.setPolicies([
      { id: 'pol_pay', effect: 'allow', actions: ['p.pay'], condition: "history.sum('p.pay', '1h') + amount <= 100" },
    ]);
    const s = agent('confirm');
    const pay = (amount: number) => go(s, 'p.pay', { amount });
    const first = await pay(60);
    expect(read(first)).toEqual(['allow', 0]);
    const held = (await leaseOf(rt, s))!;
    expect(held.holder).toBe(leases.holder);
    const r = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/decisions/${first.id}/confirm`,
      payload: { amount: 10 },
    });
    expect(r.statusCode, r.body).toBe(200);
    const ended = (await leaseOf(rt, s))!;
    expect(ended.holder).toBeNull();
    expect(ended.epoch).not.toBe(held.epoch);
    // This process's memory still says 60 (60 + 80 > 100): its write fails, the gate reads 10.
    expect(read(await pay(80))).toEqual(['allow', 10]);
    pastCooldown();
    expect(read(await pay(15))).toEqual(['deny', 90]);
    expect(await leaseOf(rt, s)).toMatchObject({ holder: leases.holder });
    // Decimal amounts, added exactly from memory.
    expect(read(await pay(9.9))).toEqual(['allow', 90]);
    expect(read(await pay(0.1))).toEqual(['allow', 99.9]);
    expect(read(await pay(0.1))).toEqual(['deny', 100]);
    expect((await countedOf(rt, s)).map((e) => [e.amount, e.confirmed_amount]).sort()).toEqual([
      ['0.1', null],
      ['60', '10'],
      ['80', null],
      ['9.9', null],
    ]);
  });

  it('a review denied moves its entry to denied and ends the lease; history.denied then counts it', async () => {
    await rt.setPolicies([
      {
        id: 'pol_refund',
        effect: 'review',
        actions: ['r.refund'],
        approval: { required: true, timeout_seconds: 600 },
        condition: "history.count('r.refund', '1d') < 3",
      },
      { id: 'pol_check', effect: 'allow', actions: ['r.check'], condition: "history.denied('r.refund', '1d') < 1" },
    ]);
    const s = agent('review');
    const pending = await go(s, 'r.refund');
    expect(pending.status).toBe('awaiting_approval');
    expect(read(await go(s, 'r.check'))).toEqual(['allow', 0]);
    const held = (await leaseOf(rt, s))!;
    expect(held.holder).toBe(leases.holder);
    const reviewer = await rt.keyWith(['reviews:write']);
    await review(rt, reviewer, pending.id, 'deny');
    expect((await entriesOf(rt, s)).map((e) => e.kind)).toEqual(['denied']);
    const ended = (await leaseOf(rt, s))!;
    expect(ended.holder).toBeNull();
    expect(ended.epoch).not.toBe(held.epoch);
    // Memory would say no denial: the write fails, the gate counts it.
    expect(read(await go(s, 'r.check'))).toEqual(['deny', 1]);
    pastCooldown();
    expect(read(await go(s, 'r.check'))).toEqual(['deny', 1]);
    expect(await leaseOf(rt, s)).toMatchObject({ holder: leases.holder });
    const again = await go(s, 'r.refund');
    expect([again.status, valueOf(again)]).toEqual(['awaiting_approval', 0]);
  });

  it('another holder takes the lease and writes an entry: the next decision fails its epoch check and is decided again through the gate, exactly', async () => {
    await rt.setPolicies([
      { id: 'pol_go', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 3" },
    ]);
    const s = agent('stolen');
    expect([read(await go(s)), read(await go(s))]).toEqual([
      ['allow', 0],
      ['allow', 1],
    ]);
    const mine = (await leaseOf(rt, s))!;
    const now = rt.clock.now();
    const key = sessionKey(rt, s);
    const taken = await takeLease(
      rt.store.sql,
      'other',
      { lockKey: key, accountId: rt.accountId, environment: 'test', scope: 'session', key: s },
      now,
      1000,
      3600,
    );
    expect(taken!.entries).toHaveLength(2);
    expect(taken!.epoch).not.toBe(mine.epoch);
    // An entry another process stored meanwhile (a gate entry: its own row).
    await rt.store
      .sql`insert into history_gate_entries (account_id, environment, decision_id, agent_id, session_id, action,
        kind, evaluated_at, keep_until, scopes)
      values (${rt.accountId}, 'test', 'dec_other', 'other-agent', ${s}, 'x.go', 'counted',
        to_timestamp(${now}::float8 / 1000), to_timestamp(${now + 3_600_000}::float8 / 1000), 15)`;
    // From memory it would be allowed at 2.
    const third = await go(s);
    expect(read(third)).toEqual(['deny', 3]);
    expect(await rt.store.sql`select effect from decisions where id = ${third.id}`).toEqual([{ effect: 'deny' }]);
    // The gate ended the other's lease too.
    expect(await leaseOf(rt, s)).toMatchObject({ holder: null });
    pastCooldown();
    expect(read(await go(s))).toEqual(['deny', 3]);
    expect(await leaseOf(rt, s)).toMatchObject({ holder: leases.holder });
    expect(await countedOf(rt, s)).toHaveLength(3);
  });

  it.each([true, false])(
    '200 concurrent decisions against history.count < 5 in one session: exactly 5 allows (leases %s)',
    async (on) => {
      const policies = [
        { id: 'pol_race', effect: 'allow' as const, actions: ['z.go'], condition: "history.count('z.go', '1h') < 5" },
      ];
      const target = on ? rt : await startRuntime(kind, { config: { historyLeases: false } });
      try {
        expect(leasesOf(target) === null).toBe(!on);
        await target.setPolicies(policies);
        const s = agent('race');
        const answers = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            decide(target, { agent_id: agent(`racer${i % 7}`), session_id: s, action: 'z.go' }),
          ),
        );
        const allowed = answers.filter((a) => a.effect === 'allow');
        expect(allowed.map(valueOf).sort()).toEqual([0, 1, 2, 3, 4]);
        for (const a of answers) if (a.effect === 'deny') expect(valueOf(a)).toBe(5);
        expect(await countedOf(target, s)).toHaveLength(5);
        // No history.denied function sees z.go: the denials leave no entry, on either path.
        const denied = await target.store.sql<Array<{ n: number }>>`
          select count(*)::int as n from history_entries where session_id = ${s} and kind = 'denied'`;
        expect(denied[0]!.n).toBe(0);
        const rows = await target.store.sql<Array<{ n: number }>>`select count(*)::int as n from history_leases`;
        if (on) expect(rows[0]!.n).toBeGreaterThan(0);
        else expect(rows[0]!.n).toBe(0);
      } finally {
        if (!on) await target.close();
      }
    },
    120_000,
  );

  it.each([true, false])(
    'a denied decision leaves an entry only when a history.denied function sees it, on either path (leases %s)',
    async (on) => {
      const target = on ? rt : await startRuntime(kind, { config: { historyLeases: false } });
      try {
        await target.setPolicies([
          { id: 'pol_q', effect: 'allow', actions: ['q.go'], condition: "history.count('q.go', '1h') < 1" },
          { id: 'pol_w', effect: 'allow', actions: ['w.go'], condition: "history.count('w.go', '1h') < 1" },
          { id: 'pol_w_denied', effect: 'deny', actions: ['w.look'], condition: "history.denied('w.go', '1h') > 5" },
        ]);
        const s = agent('denials');
        const effects: string[] = [];
        for (const action of ['q.go', 'q.go', 'w.go', 'w.go', 'w.go'])
          effects.push((await decide(target, { agent_id: agent('d'), session_id: s, action })).effect);
        expect(effects).toEqual(['allow', 'deny', 'allow', 'deny', 'deny']);
        const kept = await target.store.sql<Array<{ action: string; kind: string; n: number }>>`
          select action, kind, count(*)::int as n from history_entries where session_id = ${s}
          group by 1, 2 order by 1, 2`;
        expect(kept).toEqual([
          { action: 'q.go', kind: 'counted', n: 1 },
          { action: 'w.go', kind: 'counted', n: 1 },
          { action: 'w.go', kind: 'denied', n: 2 },
        ]);
      } finally {
        if (!on) await target.close();
      }
    },
    120_000,
  );

  it('a key taken for a short window is taken again, reaching further back, for a longer one', async () => {
    await rt.setPolicies([
      { id: 'pol_go', effect: 'allow', actions: ['r.go'] },
      { id: 'pol_short', effect: 'allow', actions: ['r.short'], condition: "history.count('r.go', '1h') < 100" },
      { id: 'pol_long', effect: 'allow', actions: ['r.long'], condition: "history.count('r.go', '2h') < 100" },
    ]);
    const s = agent('reach');
    // Kept for 2 h (the longest window), stored in its decision's row.
    await go(s, 'r.go');
    rt.clock.advance(90 * 60);
    // Another process's memory: its store read reaches back as far as the windows it was taken for.
    const other = new HistoryLeases(rt.store.sql);
    const short = await sessionPlan(rt, s, 'r.short');
    expect(await other.hold(short.plan, short.now)).toBe(true);
    expect(other.values(short.plan, short.now)).toEqual([0]);
    const long = await sessionPlan(rt, s, 'r.long');
    expect(await other.hold(long.plan, long.now)).toBe(true);
    expect(other.values(long.plan, long.now)).toEqual([1]);
    pastCooldown();
  });
});
