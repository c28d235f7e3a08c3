/**
 * Where budgets, rate limits (issue: budgets and rate limits) and permit tokens
 * (issue: permit tokens) plug into the decision path. The runtime core runs with
 * the pass-through implementations below until those land.
 */
import type { Policy } from '../../compiler/policy/types.js';
import type { Principal } from '../auth/authenticate.js';
import type { DecisionRow } from '../store/decisions.js';

export interface LimitContext {
  principal: Principal;
  agentId: string;
  amount: number | null;
  /** Every matching enabled policy (their limits and budgets all apply). */
  matched: readonly Policy[];
  nowMs: number;
  decisionId: string;
}

export interface DecisionLimits {
  /** Evaluation step 3: the agent has exhausted a budget this period. */
  exhausted(principal: Principal, agentId: string, nowMs: number): boolean | Promise<boolean>;
  /**
   * Evaluation step 7, for allow and review: rate limits (throw RateLimitExceededError)
   * and budgets (return a deny). Null when nothing applies.
   */
  apply(context: LimitContext): Promise<{ deny: 'budget.exceeded'; message: string } | { warnings: Array<{ code: string; message: string }> } | null>;
}

export const noLimits: DecisionLimits = {
  exhausted: () => false,
  apply: async () => null,
};

export interface PermitIssuer {
  /** The permit token of an allow or review decision (null when tokens are not issued). */
  issue(decision: DecisionRow): string | null;
}

export const noPermits: PermitIssuer = { issue: () => null };
