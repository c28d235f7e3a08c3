/**
 * Which row of the store a request's budget counts on, and what it takes from
 * it (docs/budgets-and-limits.md#spend-controls-for-agent-runs).
 *
 * - Key: scope `agent` -> (policy, agent); `session` -> (policy, agent,
 *   session_id); `user` -> (policy, on_behalf_of), across agents. A session or
 *   user budget applying to a request without that field: 400
 *   validation.missing_field.
 * - Cost: `calls` 1; a held unit (a currency, `tokens`) `amounts[unit]`, or
 *   `amount` when it is the only held unit that applies. Two held units and
 *   only `amount`: 400 validation.invalid_field naming the units; a held unit
 *   with neither: 400 validation.missing_field. `amount` together with
 *   `amounts` must agree for the one held unit (400 validation.invalid_field).
 */
import { InvalidFieldError, MissingFieldError } from '../errors/api-error.js';
import type { BudgetCheck, BudgetTerms } from '../store/limits.js';
import { isFiat } from './limit-request.js';

import type { SpendSubject } from '../domain/decision-ports.js';

export type { SpendSubject } from '../domain/decision-ports.js';

/** How much a request spends: per held unit, or one amount when one held unit applies. */
export interface SpendAmounts {
  amount: number | null;
  amounts: Readonly<Record<string, number>> | null;
}

/**
 * The row key of one budget for this subject; null when the scope's field is
 * missing (the caller decides: a 400 for a new request, skipped on approval).
 *
 * @example
 * ```ts
 * budgetKey({ scope: 'session' } as BudgetTerms, { agentId: 'bot', sessionId: 'run_1', onBehalfOf: null });
 * // { agent_id: 'bot', session_id: 'run_1', on_behalf_of: '' }
 * ```
 */
export function budgetKey(
  terms: BudgetTerms,
  subject: SpendSubject,
): Pick<BudgetCheck, 'agent_id' | 'session_id' | 'on_behalf_of'> | null {
  switch (terms.scope) {
    case 'agent':
      return { agent_id: subject.agentId, session_id: '', on_behalf_of: '' };
    case 'session':
      return subject.sessionId === null
        ? null
        : { agent_id: subject.agentId, session_id: subject.sessionId, on_behalf_of: '' };
    case 'user':
      return subject.onBehalfOf === null ? null : { agent_id: '', session_id: '', on_behalf_of: subject.onBehalfOf };
  }
}

/**
 * Every budget keyed and costed for a new request; throws the 400s of docs/budgets-and-limits.md#budgets.
 *
 * @example
 * ```ts
 * budgetChecks(terms, { agentId: 'bot', sessionId: 'run_1', onBehalfOf: 'u_1' }, { amount: null, amounts: { USD: 0.12, tokens: 3000 } });
 * ```
 */
export function budgetChecks(terms: readonly BudgetTerms[], subject: SpendSubject, spend: SpendAmounts): BudgetCheck[] {
  if (terms.length === 0) return [];
  const heldUnits = [...new Set(terms.filter((t) => isFiat(t.unit)).map((t) => t.unit))].sort();
  checkAmountsAgree(spend, heldUnits);
  return terms.map((t) => {
    const key = budgetKey(t, subject);
    if (key === null) {
      const field = t.scope === 'session' ? 'session_id' : 'on_behalf_of';
      const message = `${field} is required: policy ${t.policy_id} has a ${t.scope}-scoped ${t.unit} budget, counted per ${t.scope === 'session' ? 'session' : 'user'}`;
      throw new MissingFieldError(message, { details: [{ path: `/${field}`, message }] });
    }
    return { ...t, ...key, cost: isFiat(t.unit) ? heldCost(t, heldUnits, spend) : 1 };
  });
}

/**
 * `amount` given together with `amounts` must agree for the one held unit
 * (docs/operations.md#input-limits): else a condition could read one figure while the
 * budget holds another. Two or more held units, or the held unit missing from
 * `amounts` or given another figure there: 400 validation.invalid_field at
 * `/amount`. Nothing to check when either is absent or no held unit applies.
 *
 * @example
 * ```ts
 * checkAmountsAgree({ amount: 4, amounts: { USD: 4 } }, ['USD']);   // fine
 * checkAmountsAgree({ amount: 1, amounts: { USD: 900 } }, ['USD']); // throws InvalidFieldError
 * ```
 */
export function checkAmountsAgree(spend: SpendAmounts, heldUnits: readonly string[]): void {
  if (spend.amount === null || spend.amounts === null || heldUnits.length === 0) return;
  const [unit] = heldUnits;
  if (heldUnits.length === 1 && spend.amounts[unit!] === spend.amount) return;
  const message =
    heldUnits.length === 1
      ? `amount (${spend.amount}) and amounts.${unit} (${spend.amounts[unit!] ?? 'missing'}) disagree: give the same figure, or amounts alone`
      : `amount cannot go with amounts when budgets of ${heldUnits.length} held units apply (${heldUnits.join(', ')}): give amounts alone`;
  throw new InvalidFieldError(message, { details: [{ path: '/amount', message }] });
}

/** What a held unit's budget takes: `amounts[unit]`, else `amount` when it is the only held unit. */
function heldCost(t: BudgetTerms, heldUnits: readonly string[], spend: SpendAmounts): number {
  const given = spend.amounts?.[t.unit];
  if (given !== undefined) return given;
  if (spend.amount !== null && heldUnits.length === 1) return spend.amount;
  if (spend.amount !== null) {
    const message = `budgets of ${heldUnits.length} held units apply (${heldUnits.join(', ')}): give amounts per unit, e.g. amounts: { ${heldUnits.map((u) => `"${u}": ...`).join(', ')} }, not amount`;
    throw new InvalidFieldError(message, { details: [{ path: '/amount', message }] });
  }
  if (spend.amounts !== null) {
    const message = `amounts.${t.unit} is required: policy ${t.policy_id} has a ${t.unit} budget, which holds the request's ${t.unit}`;
    throw new MissingFieldError(message, { details: [{ path: `/amounts/${t.unit}`, message }] });
  }
  const message =
    heldUnits.length === 1
      ? `amount is required: policy ${t.policy_id} has a ${t.unit} budget, which holds the request's amount`
      : `amounts is required: budgets of ${heldUnits.join(', ')} apply, each holding the request's amount in its unit`;
  throw new MissingFieldError(message, {
    details: [{ path: heldUnits.length === 1 ? '/amount' : '/amounts', message }],
  });
}
