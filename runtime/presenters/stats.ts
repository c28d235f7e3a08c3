/** The public forms of the dashboard's overview figures (GET /v1/stats/decisions, GET /v1/stats/budgets). */
import type { BudgetNearLimitList, DecisionStats as DecisionStatsBody } from '../../clients/typescript/wire.js';
import type { BudgetAccount } from '../domain/budgets.js';
import type { DecisionStats } from '../domain/stats.js';
import type { Environment } from '../tenant.js';
import { budgetResource } from './budget.js';
import { listBody } from './list.js';

/**
 * `{ object: 'decision_stats', minutes, since, until, per_minute: [{ minute, allow, deny, review }], totals, top_denied_agents, top_denied_actions }`.
 *
 * @example
 * decisionStatsBody(await stats.decisions(principal, 60), 'test').per_minute.length; // => 60
 */
export function decisionStatsBody(s: DecisionStats, environment: Environment): DecisionStatsBody {
  return {
    object: 'decision_stats',
    minutes: s.minutes,
    since: new Date(s.sinceMs).toISOString(),
    until: new Date(s.untilMs).toISOString(),
    per_minute: s.perMinute.map(({ minuteMs, allow, deny, review }) => ({
      minute: new Date(minuteMs).toISOString(),
      allow,
      deny,
      review,
    })),
    totals: s.totals,
    top_denied_agents: s.topDeniedAgents,
    top_denied_actions: s.topDeniedActions,
    livemode: environment === 'live',
  };
}

/** The budgets nearest their limits, as a list of budgets (GET /v1/budgets' items) with `used_fraction`. */
export function budgetStatsBody(
  items: Array<BudgetAccount & { used_fraction: number }>,
  environment: Environment,
): BudgetNearLimitList {
  return listBody(
    items.map((b) => ({ ...budgetResource(b, environment), used_fraction: b.used_fraction })),
    false,
    '/v1/stats/budgets',
  );
}
