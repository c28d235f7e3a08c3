/** The normalised form of a policy: defaults applied, every field present or explicitly absent. */
import type { HistoryValues } from '../history/probe.js';
export type Effect = 'allow' | 'deny' | 'review';
/**
 * `enabled`: decides. `disabled`: does not exist for decisions (reason
 * `policy.disabled` when only disabled policies would have matched).
 * `shadow`: does not exist for enforcement either (not even as a disabled one),
 * but decisions also compute what they would be with the shadow policies enabled
 * (`Evaluation.shadow`), to try a change on live traffic.
 */
export type PolicyState = 'enabled' | 'disabled' | 'shadow';
export type BudgetPeriod = 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly';

export const EFFECTS: readonly Effect[] = ['allow', 'deny', 'review'];
export const POLICY_STATES: readonly PolicyState[] = ['enabled', 'disabled', 'shadow'];
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['hourly', 'daily', 'weekly', 'monthly', 'yearly'];
export const RATE_WINDOWS = ['per_second', 'per_minute', 'per_hour', 'per_day'] as const;
export type RateWindow = (typeof RATE_WINDOWS)[number];

export type RateLimit = Partial<Record<RateWindow, number>>;

/**
 * Whose spend a budget counts (extension): `agent` (per policy and agent, the
 * default), `session` (per policy, agent and the request's `session_id`),
 * `user` (per policy and the request's `on_behalf_of`, across agents).
 */
export type BudgetScope = 'agent' | 'session' | 'user';
export const BUDGET_SCOPES: readonly BudgetScope[] = ['agent', 'session', 'user'];

/**
 * A budget's scope, `agent` when the policy does not say.
 * @example
 * ```ts
 * import { budgetScope } from 'agent-authz/compiler';
 *
 * console.log(budgetScope({ unit: 'USD', limit: 5, period: 'daily', scope: 'session' }), budgetScope({ unit: 'USD', limit: 5, period: 'daily' })); // => session agent
 * ```
 */
export function budgetScope(budget: Budget): BudgetScope {
  return budget.scope ?? 'agent';
}

/**
 * Whether a budget unit is held on decision and consumed on confirm (a currency
 * or `tokens`), rather than consumed at once (`calls`).
 * @example
 * ```ts
 * import { isHeldUnit } from 'agent-authz/compiler';
 *
 * console.log(isHeldUnit('tokens'), isHeldUnit('USD'), isHeldUnit('calls')); // => true true false
 * ```
 */
export function isHeldUnit(unit: string): boolean {
  return unit !== 'calls';
}

export interface Budget {
  /**
   * ISO 4217 code (fiat, holds the request's amount), `tokens` (holds the
   * request's tokens, like money) or `calls` (consumes 1 per allowed decision).
   */
  unit: string;
  limit: number;
  period: BudgetPeriod;
  /** Absent = `agent`. */
  scope?: BudgetScope;
  /** Fraction of the limit, 0 < x < 1, at which `budget.threshold` fires. */
  threshold_alert?: number;
}

/**
 * Approval before the action (extension, review policies only): the decision
 * waits, without a permit, until a human approves it (or denies it, or nobody
 * answers within `timeout_seconds`: then it is denied).
 */
export interface Approval {
  required: boolean;
  /** Seconds a decision waits for a reviewer (1..86400); {@link DEFAULT_APPROVAL_TIMEOUT_SECONDS} when absent. */
  timeout_seconds?: number;
}

/** How long a decision awaits approval when the policy does not say. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 900;

export interface Policy {
  id: string;
  name: string;
  description?: string;
  state: PolicyState;
  priority: number;
  effect: Effect;
  /** Agent id globs; absent = every agent. */
  agents?: string[];
  /** Action patterns: `namespace.verb`, with `*` alone or as either part. */
  actions: string[];
  /** Resource globs; absent = any resource (including none). */
  resources?: string[];
  condition?: string;
  rate_limit?: RateLimit;
  budget?: Budget;
  /** Review policies only: the decision awaits a human's approval before it has a permit. */
  approval?: Approval;
  /** Allow and review policies: labels that join the session when a decision this policy wins is allowed (docs/policies.md#labels). */
  labels?: string[];
}

/** Default priority when a policy gives none (lower number wins). */
export const DEFAULT_PRIORITY = 100;

/**
 * What the compiled table evaluates: a decision's request as conditions read it
 * (the wire request, `DecisionRequest` of clients/typescript/wire.ts, without
 * what only the service uses: `amounts`, `ttl_seconds`, `args_digest`), with
 * what the service knows besides (the agent's attributes, the session's labels,
 * the history values). Not a wire shape: the runtime builds it from one.
 */
export interface EvaluationInput {
  agent_id: string;
  action: string;
  resource?: string | null;
  amount?: number | null;
  /** The agent run (session) the request belongs to, when the caller says. */
  session_id?: string | null;
  /** The user the agent acts for, when the caller says. */
  on_behalf_of?: string | null;
  context?: Record<string, unknown> | null;
  /** The agent's stored attributes (PUT /v1/agents/:agent_id), read by conditions as `agent.attributes.…`. */
  agent_attributes?: Record<string, unknown> | null;
  /** The session's labels (what it has read), read by conditions as `session.labels`. */
  session_labels?: readonly string[] | null;
  /** The values of the history probes the candidate policies read (history/probe.ts); absent: every probe is unknown. */
  history?: HistoryValues | null;
}
