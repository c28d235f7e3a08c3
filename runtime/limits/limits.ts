/**
 * Budgets and rate limits in the decision path (contract: evaluation steps 3 and
 * 7, Budgets) and the platform limit per API key. Checks and changes are made by
 * the store in batches (group commit: one call of authz_apply_limits for every
 * request waiting), so constrained decisions cost one shared round trip.
 */
import type { Policy } from '../../compiler/policy/types.js';
import type { Principal } from '../auth/authenticate.js';
import type { Clock } from '../clock.js';
import { GroupCommit } from '../engine/group-commit.js';
import type { DecisionLimits, LimitContext, LimitVerdict } from '../engine/seams.js';
import { InvalidFieldError, MissingFieldError, RateLimitExceededError } from '../errors/api-error.js';
import type { Sql, SqlOrTx } from '../store/connect.js';
import { applyLimitBatch, CONFIRM_EXCEEDS_HOLD, resolveHolds, type BudgetUsage, type LimitOutcome } from '../store/limits.js';
import { ExhaustedAgents } from './exhausted-agents.js';
import { apiKeyRate, isFiat, policyBudgets, policyRates, type LimitRequest, type RateCheck } from './limit-request.js';

export interface LimitsOptions {
  /** Platform limit: requests per second per API key; 0 turns it off. */
  keyRateLimit: number;
  /** Batches in flight at once (PostgreSQL: several; the embedded store: 1). */
  maxInFlight: number;
}

export class Limits implements DecisionLimits {
  readonly exhaustedAgents = new ExhaustedAgents();
  private readonly gate: GroupCommit<LimitRequest, LimitOutcome>;

  constructor(
    sql: Sql,
    private readonly clock: Clock,
    private readonly options: LimitsOptions,
  ) {
    this.gate = new GroupCommit((requests) => applyLimitBatch(sql, requests, clock.now()), 500, options.maxInFlight);
  }

  exhausted(principal: Principal, agentId: string, nowMs: number, policy: (id: string) => Policy | undefined): { policy_id: string } | null {
    return this.exhaustedAgents.blocking(principal.accountId, principal.environment, agentId, nowMs, policy);
  }

  async apply(context: LimitContext): Promise<LimitVerdict> {
    const { principal, agentId, matched, nowMs } = context;
    // The platform limit of the key travels in the same call as the policies' limits.
    const rates = [...this.keyRates(principal), ...policyRates(matched, agentId)];
    const budgets = policyBudgets(matched, nowMs);
    if (rates.length === 0 && budgets.length === 0) return null;
    const fiat = budgets.find((b) => isFiat(b.unit));
    if (fiat && context.amount === null) {
      const message = `amount is required: policy ${fiat.policy_id} has a ${fiat.unit} budget, which holds the request's amount`;
      throw new MissingFieldError(message, { details: [{ path: '/amount', message }] });
    }
    const outcome = await this.gate.submit({
      account_id: principal.accountId,
      environment: principal.environment,
      agent_id: agentId,
      decision_id: context.decisionId,
      expires_at: context.expiresAt.toISOString(),
      amount: context.amount,
      rates,
      budgets,
    });
    switch (outcome.outcome) {
      case 'rate_limited':
        throw outcome.limiter.startsWith('key:')
          ? rateLimited(outcome, this.keyLimitMessage())
          : rateLimited(outcome, `agent ${agentId} exceeded the rate limit ${describeLimiter(outcome.limiter)}`);
      case 'budget_exceeded': {
        const b = outcome.budget;
        this.note(principal, [b]);
        return {
          deny: 'budget.exceeded',
          policy_id: b.policy_id,
          message: `${b.unit === 'calls' ? 'one more call' : `${outcome.cost} ${b.unit}`} would take policy ${b.policy_id}'s ${b.period} budget past its limit of ${b.limit} (consumed ${b.consumed}, held ${b.held})`,
        };
      }
      case 'ok': {
        this.note(principal, outcome.budgets);
        const warnings = outcome.budgets.filter((b) => b.past_threshold).map((b) => ({
          code: 'budget.below_threshold',
          message: `policy ${b.policy_id}'s ${b.period} budget is past its ${Math.round(b.threshold! * 100)}% threshold: ${b.consumed} of ${b.limit} ${b.unit} consumed`,
          policy_ids: [b.policy_id],
        }));
        return warnings.length > 0 ? { warnings } : null;
      }
    }
  }

  /**
   * The platform limit of the request's API key, for every authenticated request
   * but decisions (which check it within `apply`).
   */
  async admitKey(principal: Principal): Promise<void> {
    const rates = this.keyRates(principal);
    if (rates.length === 0) return;
    const outcome = await this.gate.submit({
      account_id: principal.accountId,
      environment: principal.environment,
      agent_id: '',
      decision_id: null,
      expires_at: null,
      amount: null,
      rates,
      budgets: [],
    });
    if (outcome.outcome === 'rate_limited') throw rateLimited(outcome, this.keyLimitMessage());
  }

  private keyRates(principal: Principal): RateCheck[] {
    return this.options.keyRateLimit === 0 ? [] : [apiKeyRate(principal.keyId, this.options.keyRateLimit)];
  }

  private keyLimitMessage(): string {
    return `this API key exceeded the platform limit of ${this.options.keyRateLimit} requests per second`;
  }

  /**
   * Confirm or reject, in the caller's transaction: the decision's holds become
   * consumption or are released. Call `note` with the result after commit.
   */
  async resolveHolds(tx: SqlOrTx, principal: Principal, decisionId: string, confirm: boolean, amount: number | null): Promise<BudgetUsage[]> {
    try {
      return await resolveHolds(tx, principal.accountId, principal.environment, decisionId, confirm, amount, this.clock.now());
    } catch (error) {
      if ((error as { code?: string }).code === CONFIRM_EXCEEDS_HOLD) {
        throw new InvalidFieldError(`amount ${amount} is more than the decision's held amount; confirm at most the amount that was decided`, {
          details: [{ path: '/amount', message: 'must not exceed the decision\'s amount' }],
        });
      }
      throw error;
    }
  }

  note(principal: Principal, usage: readonly BudgetUsage[]): void {
    for (const u of usage) this.exhaustedAgents.note(principal.accountId, principal.environment, u);
  }

  idle(): Promise<void> {
    return this.gate.idle();
  }
}

function rateLimited(outcome: { retry_after_ms: number }, message: string): RateLimitExceededError {
  const seconds = Math.max(1, Math.ceil(outcome.retry_after_ms / 1000 - 1e-9));
  return new RateLimitExceededError(`${message}; retry in ${seconds} s`, seconds);
}

/** `policy:<id>:<window>:<agent>` -> "per_minute of policy pol_x". */
function describeLimiter(key: string): string {
  const [, policyId, window] = key.split(':');
  return `${window} of policy ${policyId}`;
}
