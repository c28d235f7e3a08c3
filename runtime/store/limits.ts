/**
 * Rate limits and budgets in the store: thin calls of the SQL functions of
 * migrations/003_limits.sql, where every check and change is made atomically.
 */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';

export interface RateCheck {
  /** Unique per limiter within the environment. */
  key: string;
  /** GCRA emission interval: window / limit. */
  interval_ms: number;
  window_ms: number;
}

export interface BudgetCheck {
  policy_id: string;
  unit: string;
  period: string;
  period_start: string;
  period_end: string;
  limit: number;
  threshold: number | null;
}

export interface LimitRequest {
  account_id: string;
  environment: Environment;
  agent_id: string;
  /** The decision a fiat hold belongs to, and when it expires. */
  decision_id: string | null;
  expires_at: string | null;
  amount: number | null;
  rates: RateCheck[];
  budgets: BudgetCheck[];
}

/** A budget row as the runtime sees it after a change (numbers, not numeric strings). */
export interface BudgetUsage {
  policy_id: string;
  agent_id: string;
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

export type LimitOutcome =
  | { outcome: 'ok'; budgets: BudgetUsage[] }
  | { outcome: 'rate_limited'; retry_after_ms: number; limiter: string }
  | { outcome: 'budget_exceeded'; budget: BudgetUsage; cost: number };

/**
 * One call for a whole batch; the outcomes in the batch's order. Budgets are
 * judged at `nowMs` (the service clock); rate limiters on the database's clock
 * plus `rateOffsetMs` when it is given (a service clock that follows real time),
 * else at `nowMs` too (migrations/011_clock_and_bundles.sql).
 */
export async function applyLimitBatch(sql: SqlOrTx, requests: readonly LimitRequest[], nowMs: number, rateOffsetMs: number | null): Promise<LimitOutcome[]> {
  const rows = await sql<Array<{ i: number; result: LimitOutcome }>>`
    select i, result from authz_apply_limits(${sql.json(requests as never)}::jsonb, ${nowMs}::float8, ${rateOffsetMs}::float8)`;
  const out: LimitOutcome[] = new Array(requests.length);
  for (const r of rows) out[r.i - 1] = r.result;
  return out;
}

/** Error code raised by authz_resolve_holds when a confirmed amount exceeds the hold. */
export const CONFIRM_EXCEEDS_HOLD = 'AZ001';

/** Confirms (into consumption) or releases a decision's holds, in the caller's transaction. */
export async function resolveHolds(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  decisionId: string,
  confirm: boolean,
  amount: number | null,
  nowMs: number,
): Promise<BudgetUsage[]> {
  const rows = await sql<Array<{ usage: BudgetUsage }>>`
    select authz_resolve_holds as usage from authz_resolve_holds(${accountId}, ${environment}, ${decisionId}, ${confirm},
      ${amount === null ? null : String(amount)}::numeric, ${nowMs}::float8)`;
  return rows.map((r) => r.usage);
}

/** Releases expired holds: everywhere (the sweep) or in one environment. Returns how many budget rows changed. */
export async function releaseExpiredHolds(sql: SqlOrTx, nowMs: number, tenant?: { accountId: string; environment: Environment }): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`
    select authz_release_expired_holds(${nowMs}::float8, ${tenant?.accountId ?? null}, ${tenant?.environment ?? null}) as n`;
  return row?.n ?? 0;
}

export interface StoredUsage extends BudgetUsage {
  account_id: string;
  environment: Environment;
}

const USAGE = (sql: SqlOrTx) => sql`account_id, environment, policy_id, agent_id, unit, period,
  (extract(epoch from period_end) * 1000)::float8 as period_end_ms, limit_amount::float8 as limit, threshold_pct as threshold,
  consumed::float8 as consumed, held::float8 as held,
  threshold_pct is not null and consumed >= threshold_pct::numeric * limit_amount as past_threshold`;

/** Budgets whose consumption has reached their limit, in periods not yet over (start-up and catch-up of every process). */
export function exhaustedUsage(sql: SqlOrTx, nowMs: number): Promise<StoredUsage[]> {
  return sql<StoredUsage[]>`select ${USAGE(sql)} from budget_usage
    where consumed >= limit_amount and period_end > to_timestamp(${nowMs}::float8 / 1000)`;
}

/** The usage rows of an environment's current periods (optionally one agent's), by policy then agent. */
export function currentUsage(sql: SqlOrTx, accountId: string, environment: Environment, nowMs: number, agentId?: string): Promise<StoredUsage[]> {
  return sql<StoredUsage[]>`select ${USAGE(sql)} from budget_usage
    where account_id = ${accountId} and environment = ${environment}
      ${agentId === undefined ? sql`` : sql`and agent_id = ${agentId}`}
      and period_end > to_timestamp(${nowMs}::float8 / 1000) and period_start <= to_timestamp(${nowMs}::float8 / 1000)
    order by policy_id, agent_id`;
}

/** What applyLimitBatch would answer for one request now, read only (POST /v1/decisions/preview). */
export async function previewLimits(sql: SqlOrTx, request: LimitRequest, nowMs: number, rateOffsetMs: number | null): Promise<LimitOutcome> {
  const [row] = await sql<Array<{ result: LimitOutcome }>>`
    select authz_preview_limits(${sql.json(request as never)}::jsonb, ${nowMs}::float8, ${rateOffsetMs}::float8) as result`;
  return row!.result;
}
