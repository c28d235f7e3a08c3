/**
 * Rate limits and budgets in the store: thin calls of the SQL functions of
 * functions/ (authz_apply_limits.sql and the functions it calls), where every
 * check and change is made atomically.
 */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import type { DecisionRow } from './decisions.js';
import type { EventRow } from './events.js';
import type { HistoryGate } from './history.js';

export interface RateCheck {
  /** Unique per limiter within the environment. */
  key: string;
  /** GCRA emission interval: window / limit. */
  interval_ms: number;
  window_ms: number;
}

export type BudgetScope = 'agent' | 'session' | 'user';

/** A policy's budget as its period's limit (no key, no cost). */
export interface BudgetTerms {
  policy_id: string;
  unit: string;
  period: string;
  period_start: string;
  period_end: string;
  limit: number;
  threshold: number | null;
  scope: BudgetScope;
}

/**
 * One budget of a request: its terms, its row's key ('' where the scope has
 * none: agent scope keys agent_id; session agent_id and session_id; user
 * on_behalf_of) and what the request takes from it (1 for calls, the held amount
 * for a currency or tokens).
 */
export interface BudgetCheck extends BudgetTerms {
  agent_id: string;
  session_id: string;
  on_behalf_of: string;
  cost: number;
}

export interface LimitRequest {
  account_id: string;
  environment: Environment;
  /** The agent asking (a hold's agent; a user budget's events name it). */
  agent_id: string;
  /** The decision a hold belongs to, and when it expires. */
  decision_id: string | null;
  expires_at: string | null;
  rates: RateCheck[];
  budgets: BudgetCheck[];
  /** The decision's history re-check and entry (store/history.ts), when its environment's policies read history. */
  history?: HistoryGate | null;
  /**
   * The session labels the decision was evaluated with, when they were this
   * process's remembered ones: re-checked first (functions/authz_decide_batch.sql).
   */
  labels?: LabelsCheck | null;
}

/** A session's labels as a decision was evaluated with them (`held`, any order), and the session's idle time. */
export interface LabelsCheck {
  session_id: string;
  held: readonly string[];
  idle_s: number;
}

/** A budget row as the runtime sees it after a change (numbers, not numeric strings). */
export interface BudgetUsage {
  policy_id: string;
  scope: BudgetScope;
  /** Null for a user budget (shared by every agent acting for the user). */
  agent_id: string | null;
  session_id: string | null;
  on_behalf_of: string | null;
  unit: string;
  period: string;
  period_end_ms: number;
  limit: number;
  threshold: number | null;
  consumed: number;
  held: number;
  /** consumed >= threshold x limit (decided by the store, in exact arithmetic). */
  past_threshold: boolean;
}

/**
 * `history`: the values of the request's history checks under the gate's locks
 * (empty without history). `history_stale`: a value left the range its outcome
 * holds for; nothing but the rate limits moved, evaluate again with `history`.
 */
export type LimitOutcome =
  | { outcome: 'ok'; budgets: BudgetUsage[]; history?: number[]; written?: boolean }
  | { outcome: 'rate_limited'; retry_after_ms: number; limiter: string }
  | { outcome: 'budget_exceeded'; budget: BudgetUsage; cost: number; history?: number[] }
  | { outcome: 'history_stale'; history: number[] }
  | { outcome: 'labels_stale'; labels: string[] };

/**
 * A decision stored with its limits when they change nothing of it
 * (functions/authz_decide_batch.sql): the row, its decision.review event
 * (null for allow and deny: derived from the decision, migration 025), and the
 * history values it was built with (the gate's must be the same).
 */
export interface DecisionWrite {
  decision: DecisionRow;
  event: EventRow | null;
  history: readonly number[];
}

/**
 * One call for a whole batch; the outcomes in the batch's order. Budgets are
 * judged at `nowMs` (the service clock); rate limiters on the database's clock
 * plus `rateOffsetMs` when it is given (a service clock that follows real time),
 * else at `nowMs` too (functions/authz_rate_now.sql). `writes` (aligned with
 * `requests`, null where none): decisions stored in the same statement when
 * their outcome is `ok` without a warning and the history they carry holds
 * (the outcome's `written`); the caller stores the others.
 */
export async function applyLimitBatch(
  sql: SqlOrTx,
  requests: readonly LimitRequest[],
  nowMs: number,
  rateOffsetMs: number | null,
  writes: ReadonlyArray<DecisionWrite | null> = [],
): Promise<LimitOutcome[]> {
  const rows =
    writes.some((w) => w !== null) || requests.some((r) => r.labels)
      ? await sql<Array<{ i: number; result: LimitOutcome }>>`
    select i, result from authz_decide_batch(${sql.json(requests as never)}::jsonb, ${sql.json(writes as never)}::jsonb, ${nowMs}::float8, ${rateOffsetMs}::float8)`
      : await sql<Array<{ i: number; result: LimitOutcome }>>`
    select i, result from authz_apply_limits(${sql.json(requests as never)}::jsonb, ${nowMs}::float8, ${rateOffsetMs}::float8)`;
  const out: LimitOutcome[] = new Array(requests.length);
  for (const r of rows) out[r.i - 1] = r.result;
  return out;
}

/** Error code raised by authz_resolve_holds when a confirmed amount exceeds the hold. */
export const CONFIRM_EXCEEDS_HOLD = 'AZ001';
/** Error code raised by authz_resolve_holds when `amount` alone confirms holds of two or more units (message: the units). */
export const CONFIRM_NEEDS_AMOUNTS = 'AZ002';

/**
 * Confirms (into consumption) or releases a decision's holds, in the caller's
 * transaction: per hold, `amounts[unit]`, else `amount`, else the held amount.
 */
export async function resolveHolds(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  decisionId: string,
  confirm: boolean,
  amount: number | null,
  nowMs: number,
  amounts: Record<string, number> | null = null,
): Promise<BudgetUsage[]> {
  const rows = await sql<Array<{ usage: BudgetUsage }>>`
    select authz_resolve_holds as usage from authz_resolve_holds(${accountId}, ${environment}, ${decisionId}, ${confirm},
      ${amount === null ? null : String(amount)}::numeric, ${amounts === null ? null : sql.json(amounts as never)}::jsonb, ${nowMs}::float8)`;
  return rows.map((r) => r.usage);
}

/** Releases expired holds: everywhere (the sweep) or in one environment. Returns how many budget rows changed. */
export async function releaseExpiredHolds(
  sql: SqlOrTx,
  nowMs: number,
  tenant?: { accountId: string; environment: Environment },
): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`
    select authz_release_expired_holds(${nowMs}::float8, ${tenant?.accountId ?? null}, ${tenant?.environment ?? null}) as n`;
  return row?.n ?? 0;
}

export interface StoredUsage extends BudgetUsage {
  account_id: string;
  environment: Environment;
}

const USAGE = (sql: SqlOrTx) => sql`account_id, environment, policy_id, scope, nullif(agent_id, '') as agent_id,
  nullif(session_id, '') as session_id, nullif(on_behalf_of, '') as on_behalf_of, unit, period,
  (extract(epoch from period_end) * 1000)::float8 as period_end_ms, limit_amount::float8 as limit, threshold_pct as threshold,
  consumed::float8 as consumed, held::float8 as held,
  threshold_pct is not null and consumed >= threshold_pct::numeric * limit_amount as past_threshold`;

/** Budgets whose consumption has reached their limit, in periods not yet over (start-up and catch-up of every process). */
export function exhaustedUsage(sql: SqlOrTx, nowMs: number): Promise<StoredUsage[]> {
  return sql<StoredUsage[]>`select ${USAGE(sql)} from budget_usage
    where consumed >= limit_amount and period_end > to_timestamp(${nowMs}::float8 / 1000)`;
}

/**
 * The usage rows of an environment's current periods, by policy then key;
 * optionally only one agent's (its agent and session rows), one session's, one
 * user's (user rows), each through an index.
 */
export function currentUsage(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  nowMs: number,
  filter: { agentId?: string; sessionId?: string; onBehalfOf?: string } = {},
): Promise<StoredUsage[]> {
  const { agentId, sessionId, onBehalfOf } = filter;
  return sql<StoredUsage[]>`select ${USAGE(sql)} from budget_usage
    where account_id = ${accountId} and environment = ${environment}
      ${agentId === undefined ? sql`` : sql`and agent_id = ${agentId}`}
      ${sessionId === undefined ? sql`` : sql`and session_id = ${sessionId}`}
      ${onBehalfOf === undefined ? sql`` : sql`and on_behalf_of = ${onBehalfOf}`}
      and period_end > to_timestamp(${nowMs}::float8 / 1000) and period_start <= to_timestamp(${nowMs}::float8 / 1000)
    order by policy_id, scope, agent_id, session_id, on_behalf_of`;
}

/**
 * The current rows of these budget keys, holds of expired decisions not
 * counted (read only; the condition is functions/authz_hold_expired.sql), with
 * `remaining` = max(0, the key's limit - consumed - held) in exact decimals:
 * GET /v1/budgets/remaining. Each looked up through
 * the key's unique index; a key without a row is absent from the answer.
 */
export async function usageOfKeys(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  nowMs: number,
  keys: readonly BudgetCheck[],
): Promise<Array<StoredUsage & { remaining: number }>> {
  if (keys.length === 0) return [];
  const wanted = keys.map((k) => ({
    policy_id: k.policy_id,
    scope: k.scope,
    agent_id: k.agent_id,
    session_id: k.session_id,
    on_behalf_of: k.on_behalf_of,
    unit: k.unit,
    period: k.period,
    period_start: k.period_start,
    limit: String(k.limit),
  }));
  return sql<Array<StoredUsage & { remaining: number }>>`
    select u.*, greatest(0, u.key_limit - u.consumed_n - u.held_n)::float8 as remaining, u.consumed_n::float8 as consumed, u.held_n::float8 as held
    from (
      select b.account_id, b.environment, b.policy_id, b.scope, nullif(b.agent_id, '') as agent_id,
        nullif(b.session_id, '') as session_id, nullif(b.on_behalf_of, '') as on_behalf_of, b.unit, b.period,
        (extract(epoch from b.period_end) * 1000)::float8 as period_end_ms, b.limit_amount::float8 as limit, b.threshold_pct as threshold,
        b.threshold_pct is not null and b.consumed >= b.threshold_pct::numeric * b.limit_amount as past_threshold,
        k."limit"::numeric as key_limit, b.consumed as consumed_n,
        b.held - coalesce((select sum(h.amount) from budget_holds h
                           where h.usage_id = b.id and authz_hold_expired(h.status, h.expires_at, to_timestamp(${nowMs}::float8 / 1000))), 0) as held_n
      from jsonb_to_recordset(${sql.json(wanted as never)}::jsonb)
        as k(policy_id text, scope text, agent_id text, session_id text, on_behalf_of text, unit text, period text, period_start timestamptz, "limit" text)
      join budget_usage b on b.account_id = ${accountId} and b.environment = ${environment} and b.policy_id = k.policy_id
        and b.scope = k.scope and b.agent_id = k.agent_id and b.session_id = k.session_id and b.on_behalf_of = k.on_behalf_of
        and b.unit = k.unit and b.period = k.period and b.period_start = k.period_start
    ) u`;
}

/** What applyLimitBatch would answer for one request now, read only (POST /v1/decisions/preview). */
export async function previewLimits(
  sql: SqlOrTx,
  request: LimitRequest,
  nowMs: number,
  rateOffsetMs: number | null,
): Promise<LimitOutcome> {
  const [row] = await sql<Array<{ result: LimitOutcome }>>`
    select authz_preview_limits(${sql.json(request as never)}::jsonb, ${nowMs}::float8, ${rateOffsetMs}::float8) as result`;
  return row!.result;
}
