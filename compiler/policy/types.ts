/** The normalised form of a policy: defaults applied, every field present or explicitly absent. */
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

export interface Budget {
  /** ISO 4217 code (fiat, consumes the request's amount) or `calls` (consumes 1 per allowed decision). */
  unit: string;
  limit: number;
  period: BudgetPeriod;
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
}

/** Default priority when a policy gives none (lower number wins). */
export const DEFAULT_PRIORITY = 100;

/** What a decision is asked about. */
export interface DecisionRequest {
  agent_id: string;
  action: string;
  resource?: string | null;
  amount?: number | null;
  /** The agent run (session) the request belongs to, when the caller says. */
  session_id?: string | null;
  /** The user the agent acts for, when the caller says. */
  on_behalf_of?: string | null;
  context?: Record<string, unknown> | null;
}
