/**
 * History leases with more than one holder (issue 46,
 * runtime/history/leases.ts). On both stores: a HistoryLeases driven directly
 * (one process's memory) does not send a write queued behind a failed one and
 * names the pending entries each counted; a lease let go of (idle, or too many
 * entries) while a write decided under it is still queued must not let that
 * write be stored after the limits gate of another runtime decided the key.
 * On PostgreSQL, two runtimes (each its own pool, services and holder)
 * alternating decisions on one session, one by one and concurrently, allow
 * exactly as many as `history.count('x.go', '1h') < 7` does; a leased
 * allow's write waits for the key's lock, a leased deny that leaves no entry
 * does not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryLeases, LEASE_DEFAULTS } from '../../runtime/history/leases.js';
import { openStore } from '../../runtime/store/connect.js';
import { writeDecisionBatch } from '../../runtime/store/decisions.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { agent, decide, type DecisionAnswer } from '../helpers/kit.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';
import {
  countedOf,
  expectLeaseEnded,
  holdKeyLock,
  leaseOf,
  leasesOf,
  lockWaiters,
  performanceClock,
  read,
  sessionKey,
  sessionPlan,
  valueOf,
  decisionOf,
} from './helpers/history-leases.js';

const clock = performanceClock();
/** The process's monotonic clock moves past the lease cooldown: it takes the keys it let go of again. */
const pastCooldown = () => clock.advance(LEASE_DEFAULTS.cooldownMs + 1);

describe.each(STORE_KINDS)("one process's lease memory (%s)", (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  it('in one process: writes queued behind a failed one, decided from its memory, are not sent; each names the pending entries it counted', async () => {
    await rt.setPolicies([
      { id: 'pol_go', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 9" },
    ]);
    const s = agent('queued');
    const { plan, tenant, now } = await sessionPlan(rt, s, 'x.go');
    const own = new HistoryLeases(rt.store.sql);
    expect(await own.hold(plan, now)).toBe(true);
    const epoch = (await leaseOf(rt, s))!.epoch;
    expect(own.values(plan, now)).toEqual([0]);
    // A denial no history.denied sees leaves no entry: with nothing pending, its write only checks the epoch.
    const d0 = own.record(plan, tenant, 'dec_q0', 'denied');
    expect([d0.entry, d0.after, d0.locks]).toEqual([null, [], false]);
    const w1 = own.record(plan, tenant, 'dec_q1', 'counted');
    expect(own.values(plan, now)).toEqual([1]);
    const w2 = own.record(plan, tenant, 'dec_q2', 'counted');
    // An entry, or pending entries named in `after`: the write locks the key.
    const d1 = own.record(plan, tenant, 'dec_qd', 'denied');
    expect([w1.locks, w2.locks, d1.entry, d1.after.map((a) => a.decision_id), d1.locks]).toEqual([
      true,
      true,
      null,
      ['dec_q1', 'dec_q2'],
      true,
    ]);
    expect(w1.fences).toEqual([{ lock_key: sessionKey(rt, s), epoch }]);
    expect([w1.after, w2.after.map((a) => a.decision_id)]).toEqual([[], ['dec_q1']]);
    expect(w2.entry).toMatchObject({ decision_id: 'dec_q2', session_id: s, action: 'x.go', kind: 'counted' });
    // Stored: no longer pending.
    w1.stored();
    const w3 = own.record(plan, tenant, 'dec_q3', 'counted');
    expect(w3.after.map((a) => a.decision_id)).toEqual(['dec_q2']);
    // w2's write failed: the memory is dropped, w3 (decided from it) is not sent, and the key cools down.
    expect(w2.valid()).toBe(true);
    w2.failed();
    expect([w1.valid(), w2.valid(), w3.valid()]).toEqual([false, false, false]);
    expect(own.values(plan, now)).toBeNull();
    expect(await own.hold(plan, now)).toBe(false);
    pastCooldown();
    expect(await own.hold(plan, now)).toBe(true);
    expect(own.values(plan, now)).toEqual([0]);
  });

  it('a lease let go of (here idle) while a write decided under it is queued: after the gate decided the key elsewhere, that write fails (AZL01)', async () => {
    await rt.setPolicies([
      { id: 'pol_one', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 1" },
    ]);
    const s = agent('released');
    const { plan, tenant, now } = await sessionPlan(rt, s, 'x.go');
    const own = new HistoryLeases(rt.store.sql, { ...LEASE_DEFAULTS, idleMs: 0 });
    expect(await own.hold(plan, now)).toBe(true);
    expect(own.values(plan, now)).toEqual([0]);
    const w = own.record(plan, tenant, 'dec_w', 'counted');
    clock.advance(1);
    await own.upkeep(now);
    expect(own.size).toBe(0);
    expect(await leaseOf(rt, s)).toMatchObject({ holder: null });
    // Another runtime on the store decides the key through the gate (without leases: it does not take this one).
    const off = await startRuntime(kind, { store: rt.store, config: { historyLeases: false } });
    try {
      const g = await decide(off, { agent_id: agent('gate'), session_id: s, action: 'x.go' });
      expect(read(g)).toEqual(['allow', 0]);
    } finally {
      await off.close();
    }
    // Decided at 0 from memory while the gate allowed another at 0: storing it would make two under `< 1`.
    await expectLeaseEnded(
      writeDecisionBatch(
        rt.store.sql,
        [
          decisionOf({
            ...w.entry!,
            account_id: tenant.accountId,
            environment: tenant.environment,
            decision_id: 'dec_w',
          }),
        ],
        [],
        [],
        [],
        {
          entries: [w.entry!],
          fences: w.fences,
          locked: w.fences.map((f) => f.lock_key),
          after: w.after,
        },
      ),
    );
    expect(await countedOf(rt, s)).toHaveLength(1);
  });
});

describe('history leases across two runtimes on one PostgreSQL', () => {
  let a: TestRuntime;
  let b: TestRuntime;
  beforeAll(async () => {
    a = await startRuntime('postgres');
    await a.setPolicies([
      { id: 'pol_seven', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 7" },
      { id: 'pol_refuse', effect: 'deny', actions: ['x.no'], condition: "history.count('x.go', '1h') >= 0" },
    ]);
    // Its own pool, services and lease holder on the same database, as a second `authz serve` has.
    const store = await openStore({ databaseUrl: a.store.url!, max: 5 });
    b = await startRuntime('postgres', { store: Object.assign(store, { dispose: () => store.close() }) });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await b?.store.dispose();
    await a?.close();
  });

  const go = (rt: TestRuntime, session: string) =>
    decide(rt, { agent_id: agent('two'), session_id: session, action: 'x.go' });

  it('alternating one by one: each takes the lease from the other, and exactly 7 are allowed, each reading the count before it', async () => {
    const s = agent('alternate');
    expect(leasesOf(a)!.holder).not.toBe(leasesOf(b)!.holder);
    const answers: DecisionAnswer[] = [];
    answers.push(await go(a, s));
    expect(await leaseOf(a, s)).toMatchObject({ holder: leasesOf(a)!.holder });
    answers.push(await go(b, s));
    expect(await leaseOf(a, s)).toMatchObject({ holder: leasesOf(b)!.holder });
    for (let i = 2; i < 12; i++) answers.push(await go(i % 2 === 0 ? a : b, s));
    expect(answers.map(read)).toEqual([
      ...[0, 1, 2, 3, 4, 5, 6].map((v) => ['allow', v]),
      ...Array.from({ length: 5 }, () => ['deny', 7]),
    ]);
    expect(await countedOf(a, s)).toHaveLength(7);
  });

  it("while another transaction holds the session's key (as another process's gate does while it decides it): a leased allow's write waits; a leased deny leaving no entry is stored", async () => {
    const s = agent('locked');
    expect(read(await go(a, s))).toEqual(['allow', 0]);
    expect(await leaseOf(a, s)).toMatchObject({ holder: leasesOf(a)!.holder });
    const gate = await holdKeyLock(a.store.sql, sessionKey(a, s));
    // Decided from the lease, nothing pending: its write checks the epoch without the lock.
    const refused = await decide(a, { agent_id: agent('two'), session_id: s, action: 'x.no' });
    expect(read(refused)).toEqual(['deny', 1]);
    let settled = false;
    const allow = go(a, s).finally(() => (settled = true));
    while (!settled && (await lockWaiters(a.store.sql)) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBe(false);
    await gate.release();
    expect(read(await allow)).toEqual(['allow', 1]);
    expect(await leaseOf(a, s)).toMatchObject({ holder: leasesOf(a)!.holder });
    expect(await countedOf(a, s)).toHaveLength(2);
  });

  it('200 concurrent decisions over both runtimes: exactly 7 allows', async () => {
    const s = agent('concurrent');
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => go(i % 2 === 0 ? a : b, s)));
    const allowed = answers.filter((d) => d.effect === 'allow');
    expect(allowed.map(valueOf).sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (const d of answers) if (d.effect === 'deny') expect(valueOf(d)).toBe(7);
    expect(await countedOf(a, s)).toHaveLength(7);
    for (const rt of [a, b]) expect(read(await go(rt, s))).toEqual(['deny', 7]);
  }, 120_000);

  it('rounds of 6 concurrent decisions (3 per runtime), each after the cooldown so both decide from leases: exactly 7 allows', async () => {
    const s = agent('rounds');
    const answers: DecisionAnswer[] = [];
    for (let round = 0; round < 4; round++) {
      pastCooldown();
      answers.push(...(await Promise.all(Array.from({ length: 6 }, (_, i) => go(i % 2 === 0 ? a : b, s)))));
    }
    expect(
      answers
        .filter((d) => d.effect === 'allow')
        .map(valueOf)
        .sort(),
    ).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (const d of answers) if (d.effect === 'deny') expect(valueOf(d)).toBe(7);
    expect(await countedOf(a, s)).toHaveLength(7);
  }, 120_000);
});
