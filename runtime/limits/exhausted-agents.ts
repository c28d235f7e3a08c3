/**
 * Evaluation step 3 without a store round trip: the budgets whose consumption
 * has reached their limit this period, per agent. Once one of an agent's budgets
 * is exhausted, every decision for that agent is denied `budget.exceeded` until
 * the period resets (spec 3, Budget).
 *
 * Fed by this process's own budget changes at once, by other processes through
 * NOTIFY (the store announces an exhausted budget on the `authz_budgets`
 * channel), and by a periodic reload from the store (start-up, missed
 * notifications). An entry counts only while its policy still carries that
 * budget (same unit and period) and the recorded consumption reaches the
 * policy's current limit: raising a limit or removing the budget lifts the block.
 */
import type { Policy } from '../../compiler/index.js';
import type { Environment } from '../tenant.js';
import type { BudgetUsage } from '../store/limits.js';

interface Entry {
  policyId: string;
  unit: string;
  period: string;
  periodEndMs: number;
  consumed: number;
}

export interface ExhaustedBudget {
  policy_id: string;
}

export class ExhaustedAgents {
  private readonly byAgent = new Map<string, Entry[]>();

  /** Records a budget row's state after a change (exhausted or not). */
  note(accountId: string, environment: Environment, usage: BudgetUsage): void {
    if (usage.consumed < usage.limit) return;
    const key = `${accountId}:${environment}:${usage.agent_id}`;
    const entries = (this.byAgent.get(key) ?? []).filter(
      (e) => !(e.policyId === usage.policy_id && e.unit === usage.unit && e.period === usage.period && e.periodEndMs <= usage.period_end_ms),
    );
    entries.push({ policyId: usage.policy_id, unit: usage.unit, period: usage.period, periodEndMs: usage.period_end_ms, consumed: usage.consumed });
    this.byAgent.set(key, entries);
  }

  /**
   * Merges the store's list (all environments). Consumption never falls within a
   * period, so what is known stays true: merging loses nothing noted meanwhile.
   */
  merge(rows: ReadonlyArray<BudgetUsage & { account_id: string; environment: Environment }>): void {
    for (const r of rows) this.note(r.account_id, r.environment, r);
  }

  /** The exhausted budget that blocks the agent now, if any. */
  blocking(accountId: string, environment: Environment, agentId: string, nowMs: number, policy: (id: string) => Policy | undefined): ExhaustedBudget | null {
    const key = `${accountId}:${environment}:${agentId}`;
    const entries = this.byAgent.get(key);
    if (!entries) return null;
    let live = 0;
    let found: ExhaustedBudget | null = null;
    for (const e of entries) {
      if (e.periodEndMs <= nowMs) continue;
      live++;
      if (found) continue;
      const p = policy(e.policyId);
      const b = p?.state === 'enabled' ? p.budget : undefined;
      if (b && b.unit === e.unit && b.period === e.period && e.consumed >= b.limit) found = { policy_id: e.policyId };
    }
    if (live === 0) this.byAgent.delete(key);
    else if (live < entries.length) this.byAgent.set(key, entries.filter((e) => e.periodEndMs > nowMs));
    return found;
  }
}
