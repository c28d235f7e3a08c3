/** The public forms of budgets (docs/budgets-and-limits.md#budgets, docs/budgets-and-limits.md#spend-controls-for-agent-runs): GET /v1/budgets' items and GET /v1/budgets/remaining. */
import type { Budget } from '../../clients/typescript/wire.js';
import type { BudgetAccount, RemainingBudget } from '../domain/budgets.js';
import type { Environment } from '../tenant.js';
import { dataList, type DataList } from './list.js';

/**
 * One budget key's accounting in its current period (an item of GET /v1/budgets).
 *
 * @example
 * budgetResource(account, 'test'); // => { object: 'budget', policy_id: 'pol_run', agent_id: 'bot', scope: 'agent', ..., status: 'ok', livemode: false }
 */
export function budgetResource(b: BudgetAccount, environment: Environment): Budget {
  return {
    object: 'budget',
    policy_id: b.policy_id,
    agent_id: b.agent_id,
    scope: b.scope,
    session_id: b.session_id,
    on_behalf_of: b.on_behalf_of,
    unit: b.unit,
    limit: b.limit,
    consumed: b.consumed,
    held: b.held,
    period: b.period,
    period_start: b.period_start.toISOString(),
    period_resets_at: b.period_resets_at.toISOString(),
    threshold_alert: b.threshold_alert,
    status: b.status,
    livemode: environment === 'live',
  };
}

/**
 * GET /v1/budgets/remaining: `{ object: 'list', data }`, each item exactly the fields of docs/budgets-and-limits.md#get-v1budgetsremaining.
 *
 * @example
 * remainingBudgetsBody([{ policy_id: 'pol_run', unit: 'USD', scope: 'session', limit: 5, consumed: 1.2, held: 0.3, remaining: 3.5, period_resets_at: '...' }]).data.length; // => 1
 */
export function remainingBudgetsBody(items: readonly RemainingBudget[]): DataList<Record<string, unknown>> {
  return dataList(
    items.map((r) => ({
      policy_id: r.policy_id,
      unit: r.unit,
      scope: r.scope,
      limit: r.limit,
      consumed: r.consumed,
      held: r.held,
      remaining: r.remaining,
      period_resets_at: r.period_resets_at,
    })),
  );
}
