/**
 * History leases in the store (runtime/store/history-leases.ts) and a lease
 * holder's memory (runtime/history/leases.ts), on both stores: for random
 * history entries inserted with SQL and random checks (count, sum, denied;
 * windows; action names and patterns; MATCH on scalar, object and list values;
 * decimal amounts, confirmed or not; entries past their keep_until), the value
 * an `EntryLog` of the entries `takeLease` read computes equals the one
 * `readHistory` (authz_history_value) reads from the store; `takeLease` moves
 * the epoch and refuses a key with more entries than its cap; a leased write
 * (authz_write_leased) stores its entries only when every lease it names
 * stands at its epoch and every entry it was decided from is stored, else
 * fails with SQLSTATE AZL01 writing nothing; `pruneLeases`
 * deletes leases nobody holds or whose holder stopped renewing them; and
 * `sumDecimals` adds decimal texts exactly.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EntryLog } from '../../runtime/history/entry-log.js';
import { sumDecimals } from '../../runtime/history/decimal.js';
import { pruneLeases, takeLease, type LeaseTarget } from '../../runtime/store/history-leases.js';
import { writeDecisionBatch } from '../../runtime/store/decisions.js';
import { readHistory, type HistoryCheck } from '../../runtime/store/history.js';
import { newId } from '../../runtime/ids.js';
import { STORE_KINDS, openTestStore, type TestStore } from '../helpers/postgres.js';
import { AMOUNTS, BASE, check, entry, loggedEntry, type Entry, type Scope } from './helpers/history-entries.js';
import { decisionOf, expectLeaseEnded as ended, holdKeyLock, lockWaiters } from './helpers/history-leases.js';
import type { LeasedEntryRow } from '../../runtime/history/leases.js';

/** The longest window the random checks have: a lease taken for it reads every entry they can count. */
const DAY_S = 86_400;

const KEYS: Record<Scope, Array<string | null>> = {
  session: ['s1', 's2'],
  agent: ['a1', 'a2'],
  user: ['u1', 'u2'],
  environment: [null],
};

const lockKey = (account: string, scope: Scope, key: string | null) => [account, 'test', scope, key ?? ''].join('\x1f');
const target = (account: string, scope: Scope, key: string | null): LeaseTarget => ({
  lockKey: lockKey(account, scope, key),
  accountId: account,
  environment: 'test',
  scope,
  key,
});

/** Each entry's copies: the account's, and the same under another environment and account (no check of the account sees them). */
const copies = (account: string) => [
  [account, 'test'],
  [account, 'live'],
  [`${account}_other`, 'test'],
];

/**
 * Inserts the entries and their copies: as gate entries (history_gate_entries rows), or with `split` every other one
 * as columns of its decision's row, written by the leased write (migration 029; its id made at its evaluated_at, as
 * the service makes it).
 */
async function insert(store: TestStore, account: string, entries: readonly Entry[], split = false): Promise<void> {
  if (split) {
    await insert(
      store,
      account,
      entries.filter((_, i) => i % 2 === 0),
    );
    await insertDecisions(
      store,
      account,
      entries.filter((_, i) => i % 2 === 1),
    );
    return;
  }
  const rows = entries.flatMap((e, i) =>
    copies(account).map(([acct, env]) => ({
      account_id: acct,
      environment: env,
      decision_id: `dec_${account}_${i}`,
      agent_id: e.agent,
      session_id: e.session,
      on_behalf_of: e.user,
      ...loggedEntry(e),
      scopes: e.scopes,
    })),
  );
  if (rows.length === 0) return;
  await store.sql`
    insert into history_gate_entries (account_id, environment, decision_id, agent_id, session_id, on_behalf_of, action, kind,
                                 amount, confirmed_amount, match_values, evaluated_at, keep_until, scopes)
    select account_id, environment, decision_id, agent_id, session_id, on_behalf_of, action, kind, amount::numeric,
           confirmed_amount::numeric, match_values, to_timestamp(evaluated_at_ms / 1000.0),
           to_timestamp(keep_until_ms / 1000.0), scopes
    from jsonb_to_recordset(${store.sql.json(rows as never)}::jsonb) as e(account_id text, environment text,
      decision_id text, agent_id text, session_id text, on_behalf_of text, action text, kind text, amount text,
      confirmed_amount text, match_values jsonb, evaluated_at_ms float8, keep_until_ms float8, scopes smallint)`;
}

/** Entries as columns of their decisions' rows, written as a leased write writes them (writeDecisionBatch), confirmed ones confirmed. */
async function insertDecisions(store: TestStore, account: string, entries: readonly Entry[]): Promise<void> {
  const rows = entries.flatMap((e) => {
    const id = newId('dec', BASE + e.at);
    return copies(account).map(([acct, env]): LeasedEntryRow => ({
      account_id: acct!,
      environment: env as 'test' | 'live',
      decision_id: id,
      agent_id: e.agent,
      session_id: e.session,
      on_behalf_of: e.user,
      action: e.action,
      kind: e.kind,
      amount: e.amount === null ? null : Number(e.amount),
      match_values: e.match,
      evaluated_at_ms: BASE + e.at,
      keep_until_ms: BASE + e.at + e.keep,
      scopes: e.scopes,
    }));
  });
  if (rows.length === 0) return;
  await writeDecisionBatch(store.sql, rows.map(decisionOf), [], [], [], {
    entries: rows,
    fences: [],
    locked: [],
    after: [],
  });
  // The confirmed ones, as a confirm sets it (the decision's confirmed_amount is its entry's).
  const confirmed = entries.flatMap((e) => copies(account).map(() => e.confirmed));
  const set = rows.flatMap((r, i) => (confirmed[i] === null ? [] : [{ ...r, confirmed: confirmed[i] }]));
  if (set.length === 0) return;
  await store.sql`update decisions d set confirmed_amount = c.confirmed
    from jsonb_to_recordset(${store.sql.json(set as never)}::jsonb)
      as c(account_id text, environment text, decision_id text, confirmed float8)
    where d.account_id = c.account_id and d.environment = c.environment and d.id = c.decision_id`;
}

/** The entries of `entries` a check of `scope` and `key` reads (its scope's bit, its key). */
const ofKey = (entries: readonly Entry[], scope: Scope, key: string | null) =>
  entries.filter((e) => {
    switch (scope) {
      case 'session':
        return (e.scopes & 1) !== 0 && e.session !== null && e.session === key;
      case 'agent':
        return (e.scopes & 2) !== 0 && e.agent === key;
      case 'user':
        return (e.scopes & 4) !== 0 && e.user !== null && e.user === key;
      case 'environment':
        return (e.scopes & 8) !== 0;
    }
  });

describe.each(STORE_KINDS)('history leases in the store (%s)', (kind) => {
  let store: TestStore;
  let run = 0;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(() => store.dispose());

  it('EntryLog.value over the entries takeLease read equals readHistory (authz_history_value), for random entries and checks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { maxLength: 50 }),
        fc.array(check, { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 0, max: 900_000 }), { minLength: 1, maxLength: 3 }),
        async (entries, checks, offsets) => {
          const account = `acct_p${++run}`;
          // Half as the gate's rows, half as columns of decision rows: the view history_entries reads both.
          await insert(store, account, entries, true);
          // The lease is taken before the reads: entries past their keep_until at a read are in memory, yet count no more.
          const takenAt = BASE - 60_000;
          // Reads at random times and at the edges: an entry's keep_until, a window's start.
          const edges = entries.flatMap((e) => [BASE + e.at + e.keep, BASE + e.at + 600_000, BASE + e.at + 60_000]);
          const times = [...offsets.map((o) => BASE + o), ...edges.filter((t) => t >= takenAt).slice(0, 4)];
          const leases = new Map<string, Awaited<ReturnType<typeof takeLease>>>();
          for (const c of checks) {
            const key = KEYS[c.scope][c.key % KEYS[c.scope].length]!;
            const k = lockKey(account, c.scope, key);
            if (!leases.has(k))
              leases.set(k, await takeLease(store.sql, 'holder', target(account, c.scope, key), takenAt, 1000, DAY_S));
          }
          const storeChecks: HistoryCheck[] = checks.map((c) => ({
            scope: c.scope,
            key: KEYS[c.scope][c.key % KEYS[c.scope].length]!,
            actions: c.actions,
            window_s: c.window_s,
            measure: c.measure,
            match: c.match,
          }));
          for (const at of times) {
            const fromStore = await readHistory(store.sql, account, 'test', storeChecks, at);
            storeChecks.forEach((c, i) => {
              const lease = leases.get(lockKey(account, c.scope, c.key))!;
              expect(lease).not.toBeNull();
              expect(EntryLog.of(lease!.entries).value(c, at), `${JSON.stringify(c)} at BASE+${at - BASE}`).toBe(
                fromStore[i],
              );
              // Both equal the value of the entries as drawn (whichever way each was stored).
              const drawn = EntryLog.of(ofKey(entries, c.scope, c.key).map(loggedEntry));
              expect(fromStore[i], `${JSON.stringify(c)} at BASE+${at - BASE}, drawn`).toBe(drawn.value(c, at));
            });
          }
        },
      ),
      { numRuns: kind === 'embedded' ? 40 : 60 },
    );
  }, 240_000);

  it('takeLease: a new epoch and holder each time, the key read under it; none above the cap', async () => {
    const account = 'acct_take';
    const t = target(account, 'session', 's1');
    const first = await takeLease(store.sql, 'one', t, BASE, 10, DAY_S);
    expect(first).toEqual({ epoch: expect.any(String), entries: [] });
    await insert(store, account, [
      {
        session: 's1',
        agent: 'a1',
        user: null,
        scopes: 1,
        action: 'ns.a',
        kind: 'counted',
        amount: '0.1',
        confirmed: null,
        match: {},
        at: 0,
        keep: 3_600_000,
      },
      {
        session: 's1',
        agent: 'a1',
        user: null,
        scopes: 2,
        action: 'ns.a',
        kind: 'counted',
        amount: null,
        confirmed: null,
        match: {},
        at: 0,
        keep: 3_600_000,
      },
    ]);
    const second = await takeLease(store.sql, 'two', t, BASE, 10, DAY_S);
    expect(BigInt(second!.epoch)).toBeGreaterThan(BigInt(first!.epoch));
    // Only the entry whose session functions see it (scopes bit 1).
    expect(second!.entries).toEqual([
      expect.objectContaining({
        decision_id: `dec_${account}_0`,
        amount: '0.1',
        kind: 'counted',
        keep_until_ms: BASE + 3_600_000,
      }),
    ]);
    const rows = await store.sql<Array<{ holder: string; epoch: string }>>`
      select holder, epoch::text as epoch from history_leases where lock_key = ${t.lockKey}`;
    expect(rows).toEqual([{ holder: 'two', epoch: second!.epoch }]);
    expect(await takeLease(store.sql, 'three', t, BASE, 0, DAY_S)).toBeNull();
    // Refused: the lease it would have taken was not (the transaction rolled back).
    expect(
      await store.sql`select holder, epoch::text as epoch from history_leases where lock_key = ${t.lockKey}`,
    ).toEqual(rows);
    // An entry past its keep_until is not read.
    expect((await takeLease(store.sql, 'four', t, BASE + 3_600_001, 10, DAY_S))!.entries).toEqual([]);
    // Nor one made before the reach the lease is taken for (and a minute): kept, but no window of that reach sees it.
    expect((await takeLease(store.sql, 'five', t, BASE + 3_000_000, 10, 3000))!.entries).toHaveLength(1);
    expect((await takeLease(store.sql, 'six', t, BASE + 3_000_000, 10, 2939))!.entries).toEqual([]);
  });

  it('authz_write_leased: entries stored when every lease stands at its epoch and every entry named in `after` is stored; else AZL01 and nothing', async () => {
    const account = 'acct_write';
    const [s1, s2] = [target(account, 'session', 's1'), target(account, 'session', 's2')];
    const e1 = (await takeLease(store.sql, 'me', s1, BASE, 10, DAY_S))!.epoch;
    const e2 = (await takeLease(store.sql, 'me', s2, BASE, 10, DAY_S))!.epoch;
    const row = (id: string, session = 's1'): LeasedEntryRow => ({
      account_id: account,
      environment: 'test',
      decision_id: id,
      agent_id: 'a1',
      session_id: session,
      on_behalf_of: null,
      action: 'ns.a',
      kind: 'counted',
      amount: 0.1,
      match_values: { f: 'a' },
      evaluated_at_ms: BASE,
      keep_until_ms: BASE + 3_600_000,
      scopes: 1,
    });
    const ref = (id: string) => ({ account_id: account, environment: 'test', decision_id: id });
    const write = (
      entries: LeasedEntryRow[],
      fences: Array<{ lock_key: string; epoch: string }>,
      after: object[] = [],
    ) =>
      writeDecisionBatch(store.sql, entries.map(decisionOf), [], [], [], {
        entries,
        fences,
        locked: fences.map((f) => f.lock_key),
        after,
      } as never);
    const ids = async () =>
      (
        await store.sql<Array<{ decision_id: string }>>`select decision_id from history_entries
        where account_id = ${account} order by 1`
      ).map((r) => r.decision_id);
    await write([row('d1')], [{ lock_key: s1.lockKey, epoch: e1 }]);
    // An entry decided from d1 (stored) and from d2 (stored by the same statement).
    await write([row('d2'), row('d3')], [{ lock_key: s1.lockKey, epoch: e1 }], [ref('d1'), ref('d2')]);
    expect(await ids()).toEqual(['d1', 'd2', 'd3']);
    // Decided from an entry never stored (its write failed).
    await ended(write([row('d4')], [{ lock_key: s1.lockKey, epoch: e1 }], [ref('d_lost')]));
    // A fence at an ended epoch, alone or beside one that stands; a key without a lease.
    await ended(write([row('d5')], [{ lock_key: s1.lockKey, epoch: String(BigInt(e1) - 1n) }]));
    await ended(
      write(
        [row('d6'), row('d7', 's2')],
        [
          { lock_key: s1.lockKey, epoch: e1 },
          { lock_key: s2.lockKey, epoch: e1 },
        ],
      ),
    );
    await ended(write([row('d8')], [{ lock_key: lockKey(account, 'agent', 'a9'), epoch: e1 }]));
    expect(await ids()).toEqual(['d1', 'd2', 'd3']);
    await write(
      [row('d6'), row('d7', 's2')],
      [
        { lock_key: s1.lockKey, epoch: e1 },
        { lock_key: s2.lockKey, epoch: e2 },
      ],
    );
    // Another holder takes s1: the first holder's epoch has ended.
    await takeLease(store.sql, 'other', s1, BASE, 10, DAY_S);
    await ended(write([row('d9')], [{ lock_key: s1.lockKey, epoch: e1 }]));
    const stored = await store.sql`select decision_id, amount::text as amount, match_values, scopes from history_entries
      where account_id = ${account} and decision_id = 'd7'`;
    expect(stored).toEqual([{ decision_id: 'd7', amount: '0.1', match_values: { f: 'a' }, scopes: 1 }]);
    expect(await ids()).toEqual(['d1', 'd2', 'd3', 'd6', 'd7']);
  });

  it('authz_write_leased without entries or `after`, its keys not locked: stored while the lease stands at its epoch; AZL01 and nothing once it moved', async () => {
    const account = 'acct_unlocked';
    await store.sql`insert into accounts (id, name, created_at) values (${account}, 'unlocked', now())`;
    const s1 = target(account, 'session', 's1');
    const e1 = (await takeLease(store.sql, 'me', s1, BASE, 10, DAY_S))!.epoch;
    // What the write stores: here a new agent (its registration), named after the epoch it was decided at.
    const write = (epoch: string) =>
      writeDecisionBatch(
        store.sql,
        [],
        [],
        [{ account_id: account, environment: 'test', agent_id: `a_${epoch}`, first_seen_at: new Date(BASE) }],
        [],
        { entries: [], fences: [{ lock_key: s1.lockKey, epoch }], locked: [], after: [] },
      );
    const agents = async () =>
      (
        await store.sql<
          Array<{ agent_id: string }>
        >`select agent_id from agents where account_id = ${account} order by 1`
      ).map((r) => r.agent_id);
    await write(e1);
    const e2 = (await takeLease(store.sql, 'other', s1, BASE, 10, DAY_S))!.epoch;
    await ended(write(e1));
    expect(await agents()).toEqual([`a_${e1}`]);
    await write(e2);
    expect(await agents()).toEqual([`a_${e1}`, `a_${e2}`].sort());
  });

  it('pruneLeases deletes leases nobody holds and those not renewed for staleSeconds, and keeps the others', async () => {
    await store.sql`delete from history_leases`;
    await store.sql`insert into history_leases (lock_key, holder, epoch, renewed_at) values
      ('k_free', null, nextval('history_lease_epochs'), now()),
      ('k_held', 'p1', nextval('history_lease_epochs'), now()),
      ('k_dead', 'p2', nextval('history_lease_epochs'), now() - interval '1 hour')`;
    expect(await pruneLeases(store.sql, 600)).toBe(2);
    expect(await store.sql`select lock_key from history_leases order by 1`).toEqual([{ lock_key: 'k_held' }]);
    expect(await pruneLeases(store.sql, 600)).toBe(0);
    // The batch bounds one call.
    await store.sql`update history_leases set holder = null`;
    await store.sql`insert into history_leases (lock_key, holder, epoch, renewed_at) values
      ('k_a', null, nextval('history_lease_epochs'), now()), ('k_b', null, nextval('history_lease_epochs'), now())`;
    expect(await pruneLeases(store.sql, 600, 2)).toBe(2);
    expect(await pruneLeases(store.sql, 600, 2)).toBe(1);
    expect(await store.sql`select count(*)::int as n from history_leases`).toEqual([{ n: 0 }]);
  });
});

describe('authz_write_leased and the key locks, on PostgreSQL (a second connection waits)', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
  });
  afterAll(() => store.dispose());

  it('while another transaction holds a key: a write with an entry waits for it; one without entries or `after` (not locking) does not', async () => {
    const account = 'acct_locks';
    const s1 = target(account, 'session', 's1');
    const epoch = (await takeLease(store.sql, 'me', s1, BASE, 10, DAY_S))!.epoch;
    const fences = [{ lock_key: s1.lockKey, epoch }];
    const entry: LeasedEntryRow = {
      account_id: account,
      environment: 'test',
      decision_id: 'd_locked',
      agent_id: 'a1',
      session_id: 's1',
      on_behalf_of: null,
      action: 'ns.a',
      kind: 'counted' as const,
      amount: null,
      match_values: {},
      evaluated_at_ms: BASE,
      keep_until_ms: BASE + 3_600_000,
      scopes: 1,
    };
    // The gate's lock on the key (functions/authz_apply_limits.sql takes the same one), held until released.
    const gate = await holdKeyLock(store.sql, s1.lockKey);
    const locking = writeDecisionBatch(store.sql, [decisionOf(entry)], [], [], [], {
      entries: [entry],
      fences,
      locked: [s1.lockKey],
      after: [],
    });
    while ((await lockWaiters(store.sql)) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // Stored while the locking write waits for the key.
    await writeDecisionBatch(store.sql, [], [], [], [], { entries: [], fences, locked: [], after: [] });
    expect(await lockWaiters(store.sql)).toBe(1);
    await gate.release();
    await locking;
    const ids = await store.sql`select decision_id from history_entries where account_id = ${account}`;
    expect(ids).toEqual([{ decision_id: 'd_locked' }]);
  });
});

describe('sumDecimals', () => {
  it('adds decimal texts exactly, as numeric does', () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(sumDecimals(['0.1', '0.2'])).toBe(0.3);
    expect(sumDecimals([])).toBe(0);
    expect(sumDecimals(['7'])).toBe(7);
    expect(sumDecimals(['-0.5', '0.2'])).toBe(-0.3);
    expect(sumDecimals(['-0.1', '-0.2'])).toBe(-0.3);
    expect(sumDecimals(['0.3', '-0.1', '-0.2'])).toBe(0);
    expect(sumDecimals(['1e-7', '0.1'])).toBe(0.1000001);
    expect(sumDecimals(['1E+3', '0.5'])).toBe(1000.5);
    expect(sumDecimals(['1e21', '1'])).toBe(1e21);
    expect(sumDecimals(['2.5e-1', '.75', '5.'])).toBe(6);
    expect(sumDecimals(['+1.10', '2.20'])).toBe(3.3);
    expect(sumDecimals([' 0.1 ', '0.2'])).toBe(0.3);
    // A thousand 0.1s: 100, where floating point drifts.
    const tenths = Array.from({ length: 1000 }, () => '0.1');
    expect(tenths.reduce((s, v) => s + Number(v), 0)).not.toBe(100);
    expect(sumDecimals(tenths)).toBe(100);
    for (const bad of ['', '.', 'abc', '1..2', '1e', '--1', 'NaN', 'Infinity'])
      expect(() => sumDecimals([bad])).toThrow();
  });

  it.each(STORE_KINDS)('equals the store sum of the same numeric texts (%s)', async (kind) => {
    const store = await openTestStore(kind);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.constantFrom(...AMOUNTS, '-1e-7', '3.14159', '1E+3'), { maxLength: 20 }),
          async (xs) => {
            const [row] = await store.sql<Array<{ v: string }>>`
            select coalesce(sum(x::numeric), 0)::text as v from unnest(${xs}::text[]) as x`;
            expect(sumDecimals(xs)).toBe(Number(row!.v));
          },
        ),
        { numRuns: 50 },
      );
    } finally {
      await store.dispose();
    }
  });
});
