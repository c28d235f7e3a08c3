/**
 * GET /v1/budgets (docs/budgets-and-limits.md#get-v1budgets; scopes: docs/budgets-and-limits.md#spend-controls-for-agent-runs):
 * per budget key, the current period's accounting against the policy's current
 * budget. A row's key: (policy, agent) for an agent-scoped budget, (policy,
 * agent, session) for a session-scoped one, (policy, user) for a user-scoped
 * one. The filters `agent_id`, `session_id`, `on_behalf_of` narrow on the row's
 * key (all given must hold: a user row has no agent). Every key with accounting
 * in its current period is listed; with an agent (and no user), every enabled
 * budget whose agent filter covers it is listed too, used or not: its
 * agent-scoped budgets, or with a session its session-scoped ones. Ordered by the item's cursor: `<policy_id>:<agent_id>`,
 * `<policy_id>:<agent_id>:<session_id>`, `<policy_id>::<on_behalf_of>`;
 * `starting_after` takes that of the last item of the previous page (one that
 * is not an item: UnknownCursorError).
 *
 * GET /v1/budgets/remaining: what is left of each budget that would apply to an
 * agent, a session and a user (see {@link remainingBudgets}).
 */
import { budgetScope, matchGlob, type Budget, type BudgetScope, type Policy } from '../../compiler/index.js';
import type { Principal } from '../tenant.js';
import type { Clock } from '../clock.js';
import type { PolicySets } from '../domain/policy-sets.js';
import type { Sql } from '../store/connect.js';
import { currentUsage, releaseExpiredHolds, usageOfKeys, type BudgetCheck } from '../store/limits.js';
import { budgetKey } from '../spend-limits/budget-keys.js';
import { policyBudgets } from '../spend-limits/limit-request.js';
import { UnknownCursorError, type Page, type PageParams } from '../store/pagination.js';
import { periodBounds } from '../spend-limits/periods.js';

export type BudgetStatus = 'ok' | 'threshold' | 'exceeded';

/** One budget key's accounting in its current period (GET /v1/budgets' item; its public form: presenters/budget.ts). */
export interface BudgetAccount {
  policy_id: string;
  /** Null for a user-scoped budget (shared by every agent acting for the user). */
  agent_id: string | null;
  /** Extension: `agent`, `session` or `user`. */
  scope: BudgetScope;
  /** The session of a session-scoped budget, else null. */
  session_id: string | null;
  /** The user of a user-scoped budget, else null. */
  on_behalf_of: string | null;
  unit: string;
  limit: number;
  consumed: number;
  held: number;
  period: Budget['period'];
  period_start: Date;
  period_resets_at: Date;
  threshold_alert: number | null;
  status: BudgetStatus;
}

/** `exceeded` once consumption reaches the limit; `threshold` once it reaches threshold x limit. */
export function budgetStatus(consumed: number, budget: Budget): BudgetStatus {
  // A relative tolerance, as the store compares in exact decimals (0.7 x 10 is 7 there).
  const eps = 1e-9 * budget.limit;
  if (consumed >= budget.limit - eps) return 'exceeded';
  if (budget.threshold_alert !== undefined && consumed >= budget.threshold_alert * budget.limit - eps)
    return 'threshold';
  return 'ok';
}

/** One item of GET /v1/budgets/remaining (exactly these fields: docs/budgets-and-limits.md#get-v1budgetsremaining). */
export interface RemainingBudget {
  policy_id: string;
  unit: string;
  scope: BudgetScope;
  limit: number;
  consumed: number;
  held: number;
  /** max(0, limit - consumed - held). */
  remaining: number;
  period_resets_at: string;
}

export interface BudgetFilter {
  agentId?: string;
  sessionId?: string;
  onBehalfOf?: string;
}

type Deps = { sql: Sql; clock: Clock; policySets: PolicySets };
type BudgetPolicy = Policy & { budget: Budget };

/** A row's key as its cursor (see the file's comment). */
function cursorOf(
  policyId: string,
  scope: BudgetScope,
  agentId: string | null,
  sessionId: string | null,
  onBehalfOf: string | null,
): string {
  if (scope === 'user') return `${policyId}::${onBehalfOf}`;
  return scope === 'session' ? `${policyId}:${agentId}:${sessionId}` : `${policyId}:${agentId}`;
}

const covers = (p: Policy, agentId: string) => p.agents === undefined || p.agents.some((g) => matchGlob(g, agentId));

async function enabledBudgets(
  deps: Deps,
  principal: Principal,
): Promise<{ current: (id: string) => BudgetPolicy | undefined; all: BudgetPolicy[] }> {
  const set = await deps.policySets.get(principal.accountId, principal.environment);
  const current = (id: string): BudgetPolicy | undefined => {
    const p = set.table.byId.get(id)?.policy;
    return p && p.state === 'enabled' && p.budget ? (p as BudgetPolicy) : undefined;
  };
  return { current, all: set.table.rows.flatMap((row) => current(row.policy.id) ?? []) };
}

export async function listBudgets(
  deps: Deps,
  principal: Principal,
  page: PageParams,
  filter: BudgetFilter = {},
): Promise<Page<BudgetAccount>> {
  const { accountId, environment } = principal;
  const now = deps.clock.now();
  await releaseExpiredHolds(deps.sql, now, { accountId, environment });
  const { current, all } = await enabledBudgets(deps, principal);
  const usage = await currentUsage(deps.sql, accountId, environment, now, filter);
  const items = new Map<string, BudgetAccount>();
  const add = (
    policy: BudgetPolicy,
    key: { agent_id: string | null; session_id: string | null; on_behalf_of: string | null },
    consumed: number,
    held: number,
  ) => {
    const scope = budgetScope(policy.budget);
    const { start, end } = periodBounds(policy.budget.period, now);
    items.set(cursorOf(policy.id, scope, key.agent_id, key.session_id, key.on_behalf_of), {
      policy_id: policy.id,
      agent_id: key.agent_id,
      scope,
      session_id: key.session_id,
      on_behalf_of: key.on_behalf_of,
      unit: policy.budget.unit,
      limit: policy.budget.limit,
      consumed,
      held,
      period: policy.budget.period,
      period_start: new Date(start),
      period_resets_at: new Date(end),
      threshold_alert: policy.budget.threshold_alert ?? null,
      status: budgetStatus(consumed, policy.budget),
    });
  };
  for (const u of usage) {
    const p = current(u.policy_id);
    if (p && p.budget.unit === u.unit && p.budget.period === u.period && budgetScope(p.budget) === u.scope)
      add(p, u, u.consumed, u.held);
  }
  // With an agent (and no user): its unused budgets too, agent-scoped ones, or session-scoped ones of the session given.
  if (filter.agentId !== undefined && filter.onBehalfOf === undefined) {
    const wanted: BudgetScope = filter.sessionId === undefined ? 'agent' : 'session';
    const shown = { agent_id: filter.agentId, session_id: filter.sessionId ?? null, on_behalf_of: null };
    for (const p of all) {
      if (budgetScope(p.budget) !== wanted || !covers(p, filter.agentId)) continue;
      if (!items.has(cursorOf(p.id, wanted, shown.agent_id, shown.session_id, null))) add(p, shown, 0, 0);
    }
  }
  // A cursor must be an item of this list (like every list's starting_after).
  if (page.startingAfter !== null && !items.has(page.startingAfter)) throw new UnknownCursorError(page.startingAfter);
  const sorted = [...items.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const from = page.startingAfter === null ? 0 : sorted.findIndex(([key]) => key > page.startingAfter!);
  const rest = from < 0 ? [] : sorted.slice(from);
  return { data: rest.slice(0, page.limit).map(([, v]) => v), has_more: rest.length > page.limit };
}

/**
 * GET /v1/budgets/remaining: for each enabled budget whose agent filter covers
 * the agent and whose scope's key the request gives (a session-scoped budget
 * needs `sessionId`, a user-scoped one `onBehalfOf`), what is left this period:
 * limit (the policy's current one) - consumed - held, at least 0. Holds of
 * expired decisions do not count. Read only; each budget's row is looked up by
 * its key, so the answer costs the same however many other sessions and users
 * have rows. Ordered by policy id.
 *
 * @example
 * ```ts
 * await remainingBudgets(deps, principal, { agentId: 'bot', sessionId: 'run_1', onBehalfOf: null });
 * // [{ policy_id: 'pol_run', unit: 'USD', scope: 'session', limit: 5, consumed: 1.2, held: 0.3, remaining: 3.5, period_resets_at: '...' }]
 * ```
 */
export async function remainingBudgets(
  deps: Deps,
  principal: Principal,
  subject: { agentId: string; sessionId: string | null; onBehalfOf: string | null },
): Promise<RemainingBudget[]> {
  const now = deps.clock.now();
  const { all } = await enabledBudgets(deps, principal);
  const applying = all.filter((p) => covers(p, subject.agentId));
  const keyed = policyBudgets(applying, now).flatMap((terms): BudgetCheck[] => {
    const key = budgetKey(terms, subject);
    return key ? [{ ...terms, ...key, cost: 0 }] : [];
  });
  const rows = await usageOfKeys(deps.sql, principal.accountId, principal.environment, now, keyed);
  const byPolicy = new Map(rows.map((r) => [`${r.policy_id}\u0000${r.scope}\u0000${r.unit}\u0000${r.period}`, r]));
  return keyed
    .map((k) => {
      const row = byPolicy.get(`${k.policy_id}\u0000${k.scope}\u0000${k.unit}\u0000${k.period}`);
      const consumed = row?.consumed ?? 0;
      const held = Math.max(0, row?.held ?? 0);
      return {
        policy_id: k.policy_id,
        unit: k.unit,
        scope: k.scope,
        limit: k.limit,
        consumed,
        held,
        remaining: row ? row.remaining : k.limit,
        period_resets_at: k.period_end,
      };
    })
    .sort((a, b) => (a.policy_id < b.policy_id ? -1 : a.policy_id > b.policy_id ? 1 : 0));
}

/** GET /v1/budgets and GET /v1/budgets/remaining as a service: the functions above with this process's store, clock and policy sets. */
export class BudgetService {
  constructor(private readonly deps: Deps) {}

  list(principal: Principal, page: PageParams, filter: BudgetFilter | string = {}): Promise<Page<BudgetAccount>> {
    return listBudgets(this.deps, principal, page, typeof filter === 'string' ? { agentId: filter } : filter);
  }

  remaining(
    principal: Principal,
    subject: { agentId: string; sessionId: string | null; onBehalfOf: string | null },
  ): Promise<RemainingBudget[]> {
    return remainingBudgets(this.deps, principal, subject);
  }
}
