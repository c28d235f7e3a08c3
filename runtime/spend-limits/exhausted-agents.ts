/**
 * Evaluation step 3 without a store round trip: the budgets whose consumption
 * has reached their limit this period, per budget key. Once one of an agent's
 * (agent-scoped) budgets is exhausted, every decision for that agent is denied
 * `budget.exceeded` until the period resets (docs/budgets-and-limits.md#budgets); an exhausted
 * session-scoped budget denies only that session's decisions, an exhausted
 * user-scoped budget the decisions on behalf of that user, whichever agent asks
 * (docs/budgets-and-limits.md#spend-controls-for-agent-runs).
 *
 * Fed by this process's own budget changes at once, by other processes through
 * NOTIFY (the store announces an exhausted budget on the `authz_budgets`
 * channel), and by a periodic reload from the store (start-up, missed
 * notifications). An entry counts only while its policy still carries that
 * budget (same unit, period and scope) and the recorded consumption reaches the
 * policy's current limit: raising a limit or removing the budget lifts the block.
 */
import { budgetScope, type Policy } from '../../compiler/index.js';
import type { Environment } from '../tenant.js';
import type { SpendSubject } from '../domain/decision-ports.js';
import type { BudgetScope, BudgetUsage } from '../store/limits.js';

interface Entry {
  policyId: string;
  unit: string;
  period: string;
  scope: BudgetScope;
  periodEndMs: number;
  consumed: number;
}

export interface ExhaustedBudget {
  policy_id: string;
}

/** NUL cannot appear in a JSON string the API accepted unescaped; it separates the parts of a key. */
const SEP = '\u0000';

function keyOf(
  accountId: string,
  environment: Environment,
  usage: Pick<BudgetUsage, 'scope' | 'agent_id' | 'session_id' | 'on_behalf_of'>,
): string | null {
  switch (usage.scope ?? 'agent') {
    case 'agent':
      return usage.agent_id ? `a${SEP}${accountId}${SEP}${environment}${SEP}${usage.agent_id}` : null;
    case 'session':
      return usage.agent_id && usage.session_id
        ? `s${SEP}${accountId}${SEP}${environment}${SEP}${usage.agent_id}${SEP}${usage.session_id}`
        : null;
    case 'user':
      return usage.on_behalf_of ? `u${SEP}${accountId}${SEP}${environment}${SEP}${usage.on_behalf_of}` : null;
  }
}

export class ExhaustedAgents {
  private readonly byKey = new Map<string, Entry[]>();

  /** Records a budget row's state after a change (exhausted or not). */
  note(accountId: string, environment: Environment, usage: BudgetUsage): void {
    if (usage.consumed < usage.limit) return;
    const key = keyOf(accountId, environment, usage);
    if (key === null) return;
    const scope = usage.scope ?? 'agent';
    const entries = (this.byKey.get(key) ?? []).filter(
      (e) =>
        !(
          e.policyId === usage.policy_id &&
          e.unit === usage.unit &&
          e.period === usage.period &&
          e.scope === scope &&
          e.periodEndMs <= usage.period_end_ms
        ),
    );
    entries.push({
      policyId: usage.policy_id,
      unit: usage.unit,
      period: usage.period,
      scope,
      periodEndMs: usage.period_end_ms,
      consumed: usage.consumed,
    });
    this.byKey.set(key, entries);
  }

  /**
   * Merges the store's list (all environments). Consumption never falls within a
   * period, so what is known stays true: merging loses nothing noted meanwhile.
   */
  merge(rows: ReadonlyArray<BudgetUsage & { account_id: string; environment: Environment }>): void {
    for (const r of rows) this.note(r.account_id, r.environment, r);
  }

  /**
   * The exhausted budget that blocks this request now, if any: one of the
   * agent's, of its session's (when it names one), of its user's (when it
   * names one).
   */
  blocking(
    accountId: string,
    environment: Environment,
    subject: SpendSubject,
    nowMs: number,
    policy: (id: string) => Policy | undefined,
  ): ExhaustedBudget | null {
    // The common case (nothing exhausted anywhere) costs one size check.
    if (this.byKey.size === 0) return null;
    const { agentId, sessionId, onBehalfOf } = subject;
    return (
      this.blockingAt(`a${SEP}${accountId}${SEP}${environment}${SEP}${agentId}`, nowMs, policy) ??
      (sessionId === null
        ? null
        : this.blockingAt(
            `s${SEP}${accountId}${SEP}${environment}${SEP}${agentId}${SEP}${sessionId}`,
            nowMs,
            policy,
          )) ??
      (onBehalfOf === null
        ? null
        : this.blockingAt(`u${SEP}${accountId}${SEP}${environment}${SEP}${onBehalfOf}`, nowMs, policy))
    );
  }

  private blockingAt(key: string, nowMs: number, policy: (id: string) => Policy | undefined): ExhaustedBudget | null {
    const entries = this.byKey.get(key);
    if (!entries) return null;
    let live = 0;
    let found: ExhaustedBudget | null = null;
    for (const e of entries) {
      if (e.periodEndMs <= nowMs) continue;
      live++;
      if (found) continue;
      const p = policy(e.policyId);
      const b = p?.state === 'enabled' ? p.budget : undefined;
      if (b && b.unit === e.unit && b.period === e.period && budgetScope(b) === e.scope && e.consumed >= b.limit)
        found = { policy_id: e.policyId };
    }
    if (live === 0) this.byKey.delete(key);
    else if (live < entries.length)
      this.byKey.set(
        key,
        entries.filter((e) => e.periodEndMs > nowMs),
      );
    return found;
  }
}
