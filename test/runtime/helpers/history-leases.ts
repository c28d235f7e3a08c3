/**
 * What the history lease tests (test/runtime/history-leases*.test.ts) share: a
 * runtime's lease holder, a session key's history_leases row and entries, a
 * decision's first history reading, a plan for a session decision (to drive a
 * HistoryLeases directly), performance.now() moved forward (the lease
 * cooldown and idleness run on it) instead of waiting, a scope key's lock held
 * as the limits gate holds it and the lock waits PostgreSQL shows, and a leased
 * write refused with AZL01, and the decision row a leased entry is written in.
 */
import { afterAll, beforeAll, expect, vi } from 'vitest';
import type { History } from '../../../runtime/history/history.js';
import type { HistoryLeases, LeasedEntryRow } from '../../../runtime/history/leases.js';
import { planHistory, type HistoryPlan } from '../../../runtime/history/plan.js';
import type { Sql } from '../../../runtime/store/connect.js';
import type { DecisionRow } from '../../../runtime/store/decisions.js';
import { benchDecision } from '../../../bench/permits/decision-row.js';
import { LEASE_ENDED } from '../../../runtime/store/history-leases.js';
import type { Tenant } from '../../../runtime/tenant.js';
import type { DecisionAnswer } from '../../helpers/kit.js';
import type { JsonObject } from '../../helpers/json.js';
import type { TestRuntime } from './app.js';

/** The history leases of the runtime's decision service (null with AUTHZ_HISTORY_LEASES=0). */
export const leasesOf = (rt: TestRuntime): HistoryLeases | null =>
  (rt.services.decisions as unknown as { deps: { history: History } }).deps.history.leases;

/** The lock key of a session of the runtime's account (test environment), as history_leases names it. */
export const sessionKey = (rt: TestRuntime, session: string): string =>
  [rt.accountId, 'test', 'session', session].join('\x1f');

/** The history_leases row of the session's key, if any. */
export async function leaseOf(rt: TestRuntime, session: string) {
  const rows = await rt.store.sql<Array<{ holder: string | null; epoch: string; renewed_at: Date }>>`
    select holder, epoch::text as epoch, renewed_at from history_leases where lock_key = ${sessionKey(rt, session)}`;
  return rows[0];
}

/** The session's history entries, by decision id. */
export const entriesOf = (rt: TestRuntime, session: string) =>
  rt.store.sql<Array<{ decision_id: string; kind: string; amount: string | null; confirmed_amount: string | null }>>`
    select decision_id, kind, amount::text as amount, confirmed_amount::text as confirmed_amount
    from history_entries where session_id = ${session} order by decision_id`;

/** The session's entries count and sum read (a denied decision's, when kept, only history.denied reads). */
export const countedOf = async (rt: TestRuntime, session: string) =>
  (await entriesOf(rt, session)).filter((e) => e.kind === 'counted');

/** The value of a decision's first metadata.history reading. */
export const valueOf = (d: DecisionAnswer): number => (d.metadata as JsonObject).history[0].value as number;
/** [effect, first history value]. */
export const read = (d: DecisionAnswer): [string, number] => [d.effect, valueOf(d)];

/** The plan of a decision of `action` in `session` (agent `q`), under the runtime's current policies. */
export async function sessionPlan(
  rt: TestRuntime,
  session: string,
  action: string,
): Promise<{ plan: HistoryPlan; tenant: Tenant; now: number }> {
  const { table } = await rt.services.policySets.get(rt.accountId, 'test');
  const tenant: Tenant = { accountId: rt.accountId, environment: 'test' };
  const now = rt.clock.now();
  const fields = { resource: null, amount: null, on_behalf_of: null, context: null };
  const request = { agent_id: 'q', action, session_id: session, ...fields };
  const subject = {
    agentId: 'q',
    sessionId: session,
    onBehalfOf: null,
    action,
    resource: null,
    amount: null,
    context: null,
  };
  const plan = planHistory(table, request, subject, tenant, { reads: true, retentionDays: null, nowMs: now });
  if (plan === null) throw new Error(`no history plan for ${action}`);
  return { plan, tenant, now };
}

/**
 * Moves performance.now() forward for the test file (installed in its
 * beforeAll, restored in its afterAll): `advance(ms)`.
 */
export function performanceClock(): { advance(ms: number): void } {
  let shift = 0;
  const realNow = performance.now.bind(performance);
  beforeAll(() => {
    vi.spyOn(performance, 'now').mockImplementation(() => realNow() + shift);
  });
  afterAll(() => vi.restoreAllMocks());
  return {
    advance(ms) {
      shift += ms;
    },
  };
}

/**
 * A transaction holding the advisory lock of a scope key, as the limits gate
 * (functions/authz_apply_limits.sql) and a new lease holder take it, until
 * `release()` (which resolves once it has ended).
 */
export async function holdKeyLock(sql: Sql, lockKey: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const tx = sql.begin(async (t) => {
    await t`select pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`;
    holding();
    await released;
  });
  await held;
  return {
    release: async () => {
      release();
      await tx;
    },
  };
}

/** How many advisory locks of this database some transaction waits for (PostgreSQL's pg_locks). */
export async function lockWaiters(sql: Sql): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`select count(*)::int as n from pg_locks
    where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`;
  return row!.n;
}

/** The call fails with SQLSTATE AZL01 (LEASE_ENDED): a lease it was decided from has ended. */
export async function expectLeaseEnded(call: Promise<unknown>): Promise<void> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect((error as { code?: string } | null)?.code).toBe(LEASE_ENDED);
}

/**
 * The decision a leased entry belongs to: the permit benches' decision row with the entry's agent, session, user,
 * action, amount and time; allowed, or denied for a denied entry.
 */
export const decisionOf = (e: LeasedEntryRow): DecisionRow => ({
  ...benchDecision(0),
  account_id: e.account_id,
  environment: e.environment,
  id: e.decision_id,
  agent_id: e.agent_id,
  action: e.action,
  resource: null,
  amount: e.amount,
  effect: e.kind === 'denied' ? 'deny' : 'allow',
  reason: e.kind === 'denied' ? 'policy.denied' : 'policy.matched',
  policy_id: null,
  matched_policy_ids: [],
  status: e.kind === 'denied' ? 'denied' : 'pending',
  evaluated_at: new Date(e.evaluated_at_ms),
  expires_at: new Date(e.evaluated_at_ms + 300_000),
  session_id: e.session_id,
  on_behalf_of: e.on_behalf_of,
});
