/**
 * Budget accounting of the current periods, aggregated over agents: one row per
 * (account, environment, policy, unit, period). For the /metrics gauges, whose
 * labels must stay bounded (never one series per agent).
 */
import type { SqlOrTx } from './connect.js';

export interface BudgetTotal {
  account_id: string;
  environment: string;
  policy_id: string;
  unit: string;
  period: string;
  /** Summed over the agents with accounting this period. */
  consumed: number;
  held: number;
  /** The policy's limit per agent (as last applied). */
  limit: number;
  agents: number;
  /** Highest consumed / limit of any one agent. */
  max_utilization: number;
}

export async function currentBudgetTotals(sql: SqlOrTx, nowMs: number): Promise<BudgetTotal[]> {
  return sql<BudgetTotal[]>`
    select account_id, environment, policy_id, unit, period,
           sum(consumed)::float8 as consumed, sum(held)::float8 as held,
           max(limit_amount)::float8 as limit, count(*)::int as agents,
           coalesce(max(consumed / nullif(limit_amount, 0)), 0)::float8 as max_utilization
    from budget_usage
    where period_start <= to_timestamp(${nowMs}::float8 / 1000) and period_end > to_timestamp(${nowMs}::float8 / 1000)
    group by account_id, environment, policy_id, unit, period`;
}
