/**
 * Budgets and rate limits in the decision path (evaluation steps 3 and
 * 7: docs/policies.md#how-a-request-is-decided, docs/budgets-and-limits.md) and the platform limit per API key. Checks and changes are made by
 * the store in batches (group commit: one call of authz_apply_limits for every
 * request waiting), so constrained decisions cost one shared round trip.
 * What stays in PL/pgSQL (the checks and changes, the budget events) and why:
 * runtime/spend-limits/README.md.
 */
import type { Policy } from '../../compiler/index.js';
import type { Principal } from '../tenant.js';
import type { Clock } from '../clock.js';
import { GroupCommit, type BatchObserver } from '../shared/group-commit.js';
import type { AppliedLimits, DecisionLimits, LimitContext, LimitVerdict } from '../domain/decision-ports.js';
import { InvalidFieldError, RateLimitExceededError } from '../errors/api-error.js';
import type { Sql, SqlOrTx, Tx } from '../store/connect.js';
import { applyLimitsInTransaction } from '../store/reviews.js';
import {
  applyLimitBatch,
  CONFIRM_EXCEEDS_HOLD,
  CONFIRM_NEEDS_AMOUNTS,
  previewLimits,
  resolveHolds,
  type BudgetUsage,
  type DecisionWrite,
  type LimitOutcome,
} from '../store/limits.js';
import { budgetChecks, budgetKey, type SpendSubject } from './budget-keys.js';
import { ExhaustedAgents } from './exhausted-agents.js';
import { KeyLeases } from './key-leases.js';
import {
  isFiat,
  policyBudgets,
  policyRates,
  type BudgetCheck,
  type LimitRequest,
  type RateCheck,
} from './limit-request.js';

export interface LimitsOptions {
  /** Platform limit: requests per second per API key; 0 turns it off. */
  keyRateLimit: number;
  /** Batches in flight at once (PostgreSQL: several; the embedded store: 1). */
  maxInFlight: number;
  /** Told of each batch of authz_apply_limits calls (metrics). */
  observeBatch?: BatchObserver;
}

export class Limits implements DecisionLimits {
  readonly exhaustedAgents = new ExhaustedAgents();
  /** A request, and the decision to store with it when its limits change nothing of it (or null). */
  private readonly gate: GroupCommit<{ request: LimitRequest; write: DecisionWrite | null }, LimitOutcome>;
  private readonly keyLeases: KeyLeases;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly options: LimitsOptions,
  ) {
    // Rate limiters are judged on the database's clock when the service clock follows real time (clock.ts).
    this.gate = new GroupCommit(
      (items) =>
        applyLimitBatch(
          sql,
          items.map((x) => x.request),
          clock.now(),
          clock.realTimeOffsetMs?.() ?? null,
          items.map((x) => x.write),
        ),
      500,
      options.maxInFlight,
      options.observeBatch ?? null,
    );
    this.keyLeases = new KeyLeases(options.keyRateLimit);
  }

  exhausted(
    principal: Principal,
    subject: SpendSubject,
    nowMs: number,
    policy: (id: string) => Policy | undefined,
  ): { policy_id: string } | null {
    return this.exhaustedAgents.blocking(principal.accountId, principal.environment, subject, nowMs, policy);
  }

  judgesInStore(matched: readonly Policy[], agentId: string, nowMs: number): boolean {
    return policyRates(matched, agentId).length > 0 || policyBudgets(matched, nowMs).length > 0;
  }

  async apply(context: LimitContext): Promise<AppliedLimits> {
    const { principal, agentId, matched, nowMs } = context;
    const history = context.history ?? null;
    const labels = context.labels ?? null;
    const policyChecks = context.ratesAdmitted ? [] : policyRates(matched, agentId);
    let budgets = budgetChecks(policyBudgets(matched, nowMs), subjectOf(context), {
      amount: context.amount,
      amounts: context.amounts ?? null,
    });
    // Awaiting approval: calls are consumed on approval; now they are only checked.
    let deferredDeny: LimitOutcome | null = null;
    if (context.deferCalls) {
      const calls = budgets.filter((b) => !isFiat(b.unit));
      budgets = budgets.filter((b) => isFiat(b.unit));
      if (calls.length > 0) {
        const request = {
          account_id: principal.accountId,
          environment: principal.environment,
          agent_id: agentId,
          decision_id: null,
          expires_at: null,
          rates: [],
          budgets: calls,
        };
        const checked = await previewLimits(this.sql, request, nowMs, this.clock.realTimeOffsetMs?.() ?? null);
        // Out of calls: nothing is held; the rate limits still count the request.
        if (checked.outcome === 'budget_exceeded') [deferredDeny, budgets] = [checked, []];
      }
    }
    const submit = (keyCheck: RateCheck | null) => {
      const rates = keyCheck ? [keyCheck, ...policyChecks] : policyChecks;
      if (rates.length === 0 && budgets.length === 0 && history === null && labels === null) return null;
      const request = {
        account_id: principal.accountId,
        environment: principal.environment,
        agent_id: agentId,
        decision_id: context.decisionId,
        expires_at: context.expiresAt.toISOString(),
        rates,
        budgets,
        ...(history ? { history } : {}),
        ...(labels ? { labels } : {}),
      };
      // A deferred calls budget that denies changes the decision: it is stored by the caller.
      return this.gate.submit({ request, write: deferredDeny ? null : (context.write?.() ?? null) });
    };
    // The platform limit of the key travels in the same call as the policies' limits
    // (when this process holds no lease of the key's tokens); a retry was admitted already.
    const outcome = context.ratesAdmitted ? await submit(null) : await this.withKeyLimit(principal, nowMs, submit);
    if (outcome?.outcome === 'rate_limited') {
      throw outcome.limiter.startsWith('key:')
        ? rateLimited(outcome, this.keyLimitMessage())
        : rateLimited(outcome, `agent ${agentId} exceeded the rate limit ${describeLimiter(outcome.limiter)}`);
    }
    if (outcome?.outcome === 'history_stale') return { stale: outcome.history };
    if (outcome?.outcome === 'labels_stale') return { staleLabels: outcome.labels };
    const values = history ? (outcome?.history ?? null) : null;
    if (deferredDeny?.outcome === 'budget_exceeded')
      return { verdict: this.verdict(principal, deferredDeny, true), history: values, written: false };
    if (outcome === null) return { verdict: null, history: values, written: false };
    return {
      verdict: this.verdict(principal, outcome, true),
      history: values,
      written: outcome.outcome === 'ok' && outcome.written === true,
    };
  }

  async applyDeferredCalls(
    tx: Tx,
    principal: Principal,
    subject: SpendSubject,
    matched: readonly Policy[],
    nowMs: number,
  ): Promise<{ verdict: LimitVerdict; usage: BudgetUsage[] }> {
    // Keyed by the decision's own session and user; a budget whose scope the decision has no field for
    // (its policy changed since) does not apply to it.
    const budgets = policyBudgets(matched, nowMs).flatMap((b): BudgetCheck[] => {
      const key = isFiat(b.unit) ? null : budgetKey(b, subject);
      return key ? [{ ...b, ...key, cost: 1 }] : [];
    });
    if (budgets.length === 0) return { verdict: null, usage: [] };
    const request = {
      account_id: principal.accountId,
      environment: principal.environment,
      agent_id: subject.agentId,
      decision_id: null,
      expires_at: null,
      rates: [],
      budgets,
    };
    const outcome = await applyLimitsInTransaction(tx, request, nowMs, this.clock.realTimeOffsetMs?.() ?? null);
    // Unreachable: no rates and no history were sent.
    if (
      outcome.outcome === 'rate_limited' ||
      outcome.outcome === 'history_stale' ||
      outcome.outcome === 'labels_stale'
    ) {
      throw new Error('no rate limit, history or labels are judged for an approval');
    }
    const usage = outcome.outcome === 'ok' ? outcome.budgets : [outcome.budget];
    return { verdict: this.verdict(principal, outcome, false), usage };
  }

  /** A budget outcome as the decision sees it; `note` tells this process's exhausted-agents index. */
  private verdict(
    principal: Principal,
    outcome: Exclude<LimitOutcome, { outcome: 'rate_limited' | 'history_stale' | 'labels_stale' }>,
    note: boolean,
  ): LimitVerdict {
    switch (outcome.outcome) {
      case 'budget_exceeded': {
        const b = outcome.budget;
        if (note) this.note(principal, [b]);
        return {
          deny: 'budget.exceeded',
          policy_id: b.policy_id,
          message: `${b.unit === 'calls' ? 'one more call' : `${outcome.cost} ${b.unit}`} would take policy ${b.policy_id}'s ${b.period} budget past its limit of ${b.limit} (consumed ${b.consumed}, held ${b.held})`,
        };
      }
      case 'ok': {
        if (note) this.note(principal, outcome.budgets);
        const warnings = outcome.budgets.filter(warnsBelowThreshold).map((b) => ({
          code: 'budget.below_threshold',
          message: `policy ${b.policy_id}'s ${b.period} budget is past its ${Math.round(b.threshold! * 100)}% threshold: ${b.consumed} of ${b.limit} ${b.unit} consumed`,
          policy_ids: [b.policy_id],
        }));
        return warnings.length > 0 ? { warnings } : null;
      }
    }
  }

  /**
   * What `apply` would answer now for the policies' limits and budgets, using
   * nothing (POST /v1/decisions/preview): no limiter moves, no hold is placed,
   * no event fires. A rate limit is a value here (`rate_limited`), not a 429.
   */
  async preview(
    context: Omit<LimitContext, 'decisionId' | 'expiresAt'>,
  ): Promise<LimitVerdict | { rate_limited: number; message: string }> {
    const { principal, agentId, matched, nowMs } = context;
    const rates = policyRates(matched, agentId);
    const budgets = budgetChecks(policyBudgets(matched, nowMs), subjectOf(context), {
      amount: context.amount,
      amounts: context.amounts ?? null,
    });
    if (rates.length === 0 && budgets.length === 0) return null;
    const outcome = await previewLimits(
      this.sql,
      {
        account_id: principal.accountId,
        environment: principal.environment,
        agent_id: agentId,
        decision_id: null,
        expires_at: null,
        rates,
        budgets,
      },
      nowMs,
      this.clock.realTimeOffsetMs?.() ?? null,
    );
    if (outcome.outcome === 'rate_limited') {
      const error = rateLimited(
        outcome,
        `agent ${agentId} would exceed the rate limit ${describeLimiter(outcome.limiter)}`,
      );
      return { rate_limited: error.retryAfterSeconds, message: error.message };
    }
    if (outcome.outcome === 'history_stale' || outcome.outcome === 'labels_stale')
      throw new Error('a preview judges no history or labels'); // unreachable: none was sent
    return this.verdict(principal, outcome, false);
  }

  /**
   * The platform limit of the request's API key, for every authenticated request
   * but decisions (which check it within `apply`).
   */
  async admitKey(principal: Principal): Promise<void> {
    const outcome = await this.withKeyLimit(principal, this.clock.now(), (keyCheck) =>
      keyCheck
        ? this.gate.submit({
            request: {
              account_id: principal.accountId,
              environment: principal.environment,
              agent_id: '',
              decision_id: null,
              expires_at: null,
              rates: [keyCheck],
              budgets: [],
            },
            write: null,
          })
        : null,
    );
    if (outcome?.outcome === 'rate_limited') throw rateLimited(outcome, this.keyLimitMessage());
  }

  /**
   * Runs `submit` with the key's check when this process must ask the store (no
   * lease held: a lease, or an exact check near the limit), else without it. A
   * refused lease is retried once at cost 1, so refusals and Retry-After are exact.
   */
  private async withKeyLimit(
    principal: Principal,
    nowMs: number,
    submit: (keyCheck: RateCheck | null) => Promise<LimitOutcome> | null,
  ): Promise<LimitOutcome | null> {
    for (;;) {
      const admission = this.keyLeases.admit(principal.keyId, nowMs);
      if (admission.kind === 'wait') {
        await admission.until;
        continue;
      }
      if (admission.kind !== 'store') return submit(null);
      let outcome: LimitOutcome;
      try {
        outcome = (await submit(admission.check))!;
      } catch (error) {
        this.keyLeases.abandon(principal.keyId, admission.lease);
        throw error;
      }
      const keyRefusedForMs =
        outcome.outcome === 'rate_limited' && outcome.limiter === admission.check.key ? outcome.retry_after_ms : null;
      if (
        !this.keyLeases.settle(
          principal.keyId,
          admission.lease,
          nowMs,
          outcome.outcome !== 'rate_limited',
          keyRefusedForMs,
        )
      )
        return outcome;
    }
  }

  private keyLimitMessage(): string {
    return `this API key exceeded the platform limit of ${this.options.keyRateLimit} requests per second`;
  }

  /**
   * Confirm or reject, in the caller's transaction: the decision's holds become
   * consumption or are released. Call `note` with the result after commit.
   */
  async resolveHolds(
    tx: SqlOrTx,
    principal: Principal,
    decisionId: string,
    confirm: boolean,
    amount: number | null,
    amounts: Record<string, number> | null = null,
  ): Promise<BudgetUsage[]> {
    try {
      return await resolveHolds(
        tx,
        principal.accountId,
        principal.environment,
        decisionId,
        confirm,
        amount,
        this.clock.now(),
        amounts,
      );
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === CONFIRM_EXCEEDS_HOLD) {
        const what = amounts === null ? `amount ${amount}` : 'a confirmed amount';
        throw new InvalidFieldError(
          `${what} is more than the decision's held amount; confirm at most the amount that was decided`,
          {
            details: [
              { path: amounts === null ? '/amount' : '/amounts', message: "must not exceed the decision's amount" },
            ],
          },
        );
      }
      if (code === CONFIRM_NEEDS_AMOUNTS) {
        const units = (error as { message?: string }).message ?? '';
        const message = `decision ${decisionId} holds amounts in several units (${units}): confirm with amounts per unit, not amount`;
        throw new InvalidFieldError(message, { details: [{ path: '/amount', message }] });
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

function subjectOf(context: Pick<LimitContext, 'agentId' | 'sessionId' | 'onBehalfOf'>): SpendSubject {
  return { agentId: context.agentId, sessionId: context.sessionId ?? null, onBehalfOf: context.onBehalfOf ?? null };
}

/**
 * docs/budgets-and-limits.md#budgets: a decision carries the budget.below_threshold warning while
 * its budget is past its threshold but under its limit, after this decision's
 * change: not on the decision that reaches the limit (the budget is then
 * exceeded, and GET /v1/budgets says so). Consumption decides, as for the status.
 */
export function warnsBelowThreshold(b: BudgetUsage): boolean {
  return b.past_threshold && b.consumed < b.limit;
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
