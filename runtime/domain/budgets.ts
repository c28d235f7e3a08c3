/**
 * GET /v1/budgets (contract: Budgets): per (policy, agent), the current period's
 * accounting against the policy's current budget. With an agent, every enabled
 * budget whose agent filter covers that agent is listed, used or not; without
 * one, every (policy, agent) with accounting in its current period. Ordered by
 * policy id then agent id; `starting_after` takes `<policy_id>:<agent_id>` of
 * the last item of the previous page (one that is not an item: UnknownCursorError).
 */
import { matchGlob, type Budget, type Policy } from '../../compiler/index.js';
import type { Principal } from '../tenant.js';
import type { Clock } from '../clock.js';
import type { PolicySets } from '../domain/policy-sets.js';
import type { Sql } from '../store/connect.js';
import { currentUsage, releaseExpiredHolds } from '../store/limits.js';
import { UnknownCursorError, type Page, type PageParams } from '../store/pagination.js';
import { periodBounds } from '../limits/periods.js';

export type BudgetStatus = 'ok' | 'threshold' | 'exceeded';

export interface BudgetResource {
  object: 'budget';
  policy_id: string;
  agent_id: string;
  unit: string;
  limit: number;
  consumed: number;
  held: number;
  period: string;
  period_start: string;
  period_resets_at: string;
  threshold_alert: number | null;
  status: BudgetStatus;
  livemode: boolean;
}

/** `exceeded` once consumption reaches the limit; `threshold` once it reaches threshold x limit. */
export function budgetStatus(consumed: number, budget: Budget): BudgetStatus {
  // A relative tolerance, as the store compares in exact decimals (0.7 x 10 is 7 there).
  const eps = 1e-9 * budget.limit;
  if (consumed >= budget.limit - eps) return 'exceeded';
  if (budget.threshold_alert !== undefined && consumed >= budget.threshold_alert * budget.limit - eps) return 'threshold';
  return 'ok';
}

export async function listBudgets(
  deps: { sql: Sql; clock: Clock; policySets: PolicySets },
  principal: Principal,
  page: PageParams,
  agentId?: string,
): Promise<Page<BudgetResource>> {
  const { accountId, environment } = principal;
  const now = deps.clock.now();
  await releaseExpiredHolds(deps.sql, now, { accountId, environment });
  const set = await deps.policySets.get(accountId, environment);
  const usage = await currentUsage(deps.sql, accountId, environment, now, agentId);
  const items = new Map<string, BudgetResource>();
  const item = (policy: Policy & { budget: Budget }, agent: string, consumed: number, held: number): BudgetResource => {
    const { start, end } = periodBounds(policy.budget.period, now);
    return {
      object: 'budget',
      policy_id: policy.id,
      agent_id: agent,
      unit: policy.budget.unit,
      limit: policy.budget.limit,
      consumed,
      held,
      period: policy.budget.period,
      period_start: new Date(start).toISOString(),
      period_resets_at: new Date(end).toISOString(),
      threshold_alert: policy.budget.threshold_alert ?? null,
      status: budgetStatus(consumed, policy.budget),
      livemode: environment === 'live',
    };
  };
  const current = (id: string): (Policy & { budget: Budget }) | undefined => {
    const p = set.table.byId.get(id)?.policy;
    return p && p.state === 'enabled' && p.budget ? (p as Policy & { budget: Budget }) : undefined;
  };
  for (const u of usage) {
    const p = current(u.policy_id);
    if (p && p.budget.unit === u.unit && p.budget.period === u.period) items.set(`${u.policy_id}:${u.agent_id}`, item(p, u.agent_id, u.consumed, u.held));
  }
  if (agentId !== undefined) {
    for (const row of set.table.rows) {
      const p = current(row.policy.id);
      if (!p || items.has(`${p.id}:${agentId}`)) continue;
      if (p.agents === undefined || p.agents.some((g) => matchGlob(g, agentId))) items.set(`${p.id}:${agentId}`, item(p, agentId, 0, 0));
    }
  }
  // A cursor must be an item of this list (like every list's starting_after).
  if (page.startingAfter !== null && !items.has(page.startingAfter)) throw new UnknownCursorError(page.startingAfter);
  const sorted = [...items.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const from = page.startingAfter === null ? 0 : sorted.findIndex(([key]) => key > page.startingAfter!);
  const rest = from < 0 ? [] : sorted.slice(from);
  return { data: rest.slice(0, page.limit).map(([, v]) => v), has_more: rest.length > page.limit };
}

/** GET /v1/budgets as a service: the function above with this process's store, clock and policy sets. */
export class BudgetService {
  constructor(private readonly deps: { sql: Sql; clock: Clock; policySets: PolicySets }) {}

  list(principal: Principal, page: PageParams, agentId?: string): Promise<Page<BudgetResource>> {
    return listBudgets(this.deps, principal, page, agentId);
  }
}
