/** Counts over an environment's decisions in a time window (GET /v1/stats/decisions), grouped in SQL. */
import type { Tenant } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import type { DecisionEffect } from './decisions.js';

export interface MinuteCount {
  /** Start of the minute, ms since the epoch (UTC). */
  minute_ms: number;
  effect: DecisionEffect;
  count: number;
}

/** The window's id range (domain/decision-id-range.ts), or null. */
type IdBounds = { lo: string; hi: string };

/** The window's rows; said by id range too when known, so only the partitions of its days are read (migration 015). */
function inWindow(sql: SqlOrTx, t: Tenant, sinceMs: number, untilMs: number, ids: IdBounds | null) {
  return sql`
  account_id = ${t.accountId} and environment = ${t.environment}
  and evaluated_at >= to_timestamp(${sinceMs}::float8 / 1000) and evaluated_at < to_timestamp(${untilMs}::float8 / 1000)
  ${ids ? sql`and id >= ${ids.lo} and id < ${ids.hi}` : sql``}`;
}

/** Decisions per minute and effect (read through decisions_by_time, migration 013); minutes without any are absent. */
export async function decisionsPerMinute(
  sql: SqlOrTx,
  t: Tenant,
  sinceMs: number,
  untilMs: number,
  ids: IdBounds | null = null,
): Promise<MinuteCount[]> {
  return sql<MinuteCount[]>`
    select (floor(extract(epoch from evaluated_at) / 60) * 60000)::float8 as minute_ms, effect, count(*)::int as count
    from decisions where ${inWindow(sql, t, sinceMs, untilMs, ids)}
    group by 1, 2 order by 1, 2`;
}

/** The agents (or actions) denied most in the window, most first (ties by name). */
export async function topDenied(
  sql: SqlOrTx,
  t: Tenant,
  by: 'agent_id' | 'action',
  sinceMs: number,
  untilMs: number,
  limit: number,
  ids: IdBounds | null = null,
): Promise<Array<{ key: string; count: number }>> {
  const column = by === 'agent_id' ? sql`agent_id` : sql`action`;
  return sql<Array<{ key: string; count: number }>>`
    select ${column} as key, count(*)::int as count
    from decisions where ${inWindow(sql, t, sinceMs, untilMs, ids)} and effect = 'deny'
    group by 1 order by 2 desc, 1 limit ${limit}`;
}
