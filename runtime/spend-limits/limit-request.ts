/**
 * What one request asks of the limits store (store/limits.ts): the GCRA limiters
 * and budgets that apply to it. Built from every matching enabled policy
 * (docs/policies.md#how-a-request-is-decided) and, for the platform limit, from the API key.
 */
import { budgetScope, isHeldUnit, RATE_WINDOWS, type Policy, type RateWindow } from '../../compiler/index.js';
import type { BudgetTerms, RateCheck } from '../store/limits.js';
import { periodBounds } from './periods.js';

export type { BudgetCheck, BudgetTerms, LimitRequest, RateCheck } from '../store/limits.js';

export const WINDOW_MS: Record<RateWindow, number> = {
  per_second: 1_000,
  per_minute: 60_000,
  per_hour: 3_600_000,
  per_day: 86_400_000,
};

export function rateCheck(key: string, limit: number, windowMs: number): RateCheck {
  return { key, interval_ms: windowMs / limit, window_ms: windowMs };
}

/** Limiter keys: `policy:<id>:<window>:<agent>` and `key:<api key id>`. */
export function policyRates(matched: readonly Policy[], agentId: string): RateCheck[] {
  const checks: RateCheck[] = [];
  for (const p of matched) {
    if (!p.rate_limit) continue;
    for (const w of RATE_WINDOWS) {
      const n = p.rate_limit[w];
      if (n !== undefined) checks.push(rateCheck(`policy:${p.id}:${w}:${agentId}`, n, WINDOW_MS[w]));
    }
  }
  return checks;
}

export function apiKeyRate(keyId: string, perSecond: number): RateCheck {
  return rateCheck(`key:${keyId}`, perSecond, 1_000);
}

/** The matched policies' budgets in their current periods (no key, no cost yet: ./budget-keys.ts). */
export function policyBudgets(matched: readonly Policy[], nowMs: number): BudgetTerms[] {
  const checks: BudgetTerms[] = [];
  for (const p of matched) {
    if (!p.budget) continue;
    const { start, end } = periodBounds(p.budget.period, nowMs);
    checks.push({
      policy_id: p.id,
      unit: p.budget.unit,
      period: p.budget.period,
      period_start: new Date(start).toISOString(),
      period_end: new Date(end).toISOString(),
      limit: p.budget.limit,
      threshold: p.budget.threshold_alert ?? null,
      scope: budgetScope(p.budget),
    });
  }
  return checks;
}

/** Held on decision, consumed on confirm: a currency or tokens (not calls). */
export const isFiat = isHeldUnit;
