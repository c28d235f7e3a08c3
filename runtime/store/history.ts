/**
 * History entries in the store (migrations 021 and 029, docs/history.md): the
 * values of history probes read before a decision is evaluated, a gate entry's
 * amount on confirm and its kind on a review's denial, and the upkeep's
 * pruning. The limits gate writes its entries to history_gate_entries
 * (authz_apply_limits.sql with authz_history_record.sql), under the scope
 * keys' locks; a decision decided from leases carries its entry in its own row
 * (store/decisions.ts writeDecisionBatch), whose amount, confirmed amount and
 * review are the entry's. The view history_entries reads both.
 */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';

/** One value a candidate policy read, as a decision's `metadata.history` lists it (stored in decisions.history). */
export interface HistoryReading {
  fn: 'count' | 'sum' | 'exists' | 'denied';
  actions: string[];
  window: string;
  scope: 'session' | 'agent' | 'user' | 'environment';
  /** The MATCH fields, when the probe has any. */
  match?: string[];
  value: number;
}

/** One probe's read, for the store: its scope key and the MATCH values of the request. */
export interface HistoryCheck {
  scope: 'session' | 'agent' | 'user' | 'environment';
  /** The scope's value (session id, agent id, user); null for the environment. */
  key: string | null;
  actions: readonly string[];
  window_s: number;
  measure: 'count' | 'sum' | 'denied';
  /** MATCH field -> the request's value (JSON). */
  match: Record<string, unknown>;
}

/** A check as the gate re-judges it: the values [lo, hi] (hi null: unbounded) that give the evaluated outcome. */
export interface GatedCheck extends HistoryCheck {
  lo: number;
  hi: number | null;
}

/** The entry a decision leaves (authz_history_record.sql). */
export interface HistoryRecord {
  agent_id: string;
  session_id: string | null;
  on_behalf_of: string | null;
  action: string;
  kind: 'counted' | 'denied';
  amount: number | null;
  match_values: Record<string, unknown>;
  evaluated_at_ms: number;
  keep_until_ms: number;
  /** The scopes whose functions see the entry (migration 024): 1 session, 2 agent, 4 user, 8 environment. */
  scopes: number;
  /** No `history.denied` function sees it: not kept when the gate denies the decision (a budget). */
  counted_only?: true;
}

/** What a request of the limits gate carries of history (store/limits.ts LimitRequest.history). */
export interface HistoryGate {
  at_ms: number;
  checks: GatedCheck[];
  record: HistoryRecord | null;
  /** Scope keys locked for the request (`<account>\x1f<environment>\x1f<scope>\x1f<value>`). */
  locks: string[];
}

/**
 * The probes' values at `atMs`, in the order of `checks`: one statement.
 *
 * @example
 * const [refunds] = await readHistory(sql, 'acct_1', 'test', [{ scope: 'session', key: 'run-1', actions: ['payments.refund'], window_s: 3600, measure: 'count', match: {} }], Date.now());
 */
export async function readHistory(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  checks: readonly HistoryCheck[],
  atMs: number,
): Promise<number[]> {
  const rows = await sql<Array<{ v: string }>>`
    select authz_history_value(${accountId}, ${environment}, c.value, ${atMs}::float8)::text as v
    from jsonb_array_elements(${sql.json(checks as never)}::jsonb) with ordinality as c(value, ord)
    order by c.ord`;
  return rows.map((r) => Number(r.v));
}

/**
 * A confirmed decision's gate entry: `history.sum` adds its confirmed amount from now on (an entry in the
 * decision's row reads the decision's confirmed_amount).
 */
export async function confirmHistory(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  decisionId: string,
  amount: number | null,
): Promise<void> {
  await sql`update history_gate_entries set confirmed_amount = ${amount === null ? null : String(amount)}::numeric
    where account_id = ${accountId} and environment = ${environment} and decision_id = ${decisionId}`;
}

/**
 * A review denied or timed out: its gate entry counts for `history.denied` from now on, no longer for count
 * and sum (an entry in the decision's row: store/reviews.ts writeReview sets h_denied with the verdict).
 */
export async function denyHistory(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  decisionId: string,
): Promise<void> {
  await sql`update history_gate_entries set kind = 'denied'
    where account_id = ${accountId} and environment = ${environment} and decision_id = ${decisionId}`;
}

/**
 * Deletes up to `batch` gate entries no window needs any more (keep_until before `nowMs`); how many. (An entry
 * in its decision's row goes with the decision log's partition, and counts nowhere past its keep_until.)
 */
export async function pruneHistory(sql: SqlOrTx, nowMs: number, batch = 5000): Promise<number> {
  const rows = await sql`delete from history_gate_entries where ctid = any (array(
    select ctid from history_gate_entries where keep_until < to_timestamp(${nowMs}::float8 / 1000) limit ${batch}))
    returning 1`;
  return rows.length;
}
