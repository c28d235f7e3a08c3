// @ts-check
// Amounts with their unit. A decision's `amount` is in the unit of the held budgets
// (a currency, or tokens) of the policies that apply to it; the decision body has no
// unit of its own, so the unit is read from the budgets of its matched policies.
import { h } from './dom.js';

/** @typedef {import('./api.js').Policy} Policy */
/** @typedef {import('./api.js').Decision} Decision */

/**
 * The held units (every budget unit but `calls`) of these policies, each once.
 * Example: `heldUnits(['pol_refunds'], policies)` -> `['USD']`
 * @param {string[]} ids
 * @param {Map<string, Policy>} policies
 * @returns {string[]}
 */
export function heldUnits(ids, policies) {
  const units = ids.map((id) => policies.get(id)?.budget?.unit).filter((u) => u !== undefined && u !== 'calls');
  return [...new Set(/** @type {string[]} */ (units))];
}

/**
 * A number as shown in its unit: a currency with its digits (`25.00` in USD, `1,500`
 * in JPY), any other unit as the number is (`1,200` tokens), rounding noise cut.
 * Example: `formatNumber(75.99000000000001, 'USD')` -> `'75.99'`
 * @param {number} n
 * @param {string} unit
 * @returns {string}
 */
export function formatNumber(n, unit) {
  let digits = { minimumFractionDigits: 0, maximumFractionDigits: 6 };
  if (/^[A-Z]{3}$/.test(unit)) {
    try {
      const currency = new Intl.NumberFormat('en', { style: 'currency', currency: unit }).resolvedOptions();
      digits = {
        minimumFractionDigits: currency.minimumFractionDigits ?? 2,
        maximumFractionDigits: Math.max(currency.maximumFractionDigits ?? 2, 6),
      };
    } catch {
      // Not a currency Intl knows: the number as it is.
    }
  }
  return n.toLocaleString('en', digits);
}

/**
 * A number in a unit (formatNumber), a no-break space between them.
 * Example: `formatAmount(12.5, 'USD')` -> `'12.50 USD'`
 * @param {number} amount
 * @param {string} unit
 * @returns {string}
 */
export function formatAmount(amount, unit) {
  return `${formatNumber(amount, unit)}\u00a0${unit}`;
}

/**
 * A budget's use this period in its unit.
 * Example: `budgetUsage({ consumed: 0, held: 75.99, limit: 1000, unit: 'USD' })` -> `'0.00 consumed + 75.99 held of 1,000.00 USD'`
 * @param {{ consumed: number, held: number, limit: number, unit: string }} b
 * @returns {string}
 */
export function budgetUsage(b) {
  return `${formatNumber(b.consumed, b.unit)} consumed + ${formatNumber(b.held, b.unit)} held of ${formatAmount(b.limit, b.unit)}`;
}

/**
 * A decision's amount with its unit, as a table cell's content: `25.00 USD`; with no
 * budget naming a unit, or none this key may read, the number alone, marked so
 * (the title says why); none: an em dash.
 * Example: `h('td', { class: 'amount' }, amountText(d, await policyIndex()))`
 * @param {Decision} d
 * @param {Map<string, Policy>} policies
 * @returns {HTMLElement | string}
 */
export function amountText(d, policies) {
  if (d.amount == null) return '—';
  const ids = d.metadata?.matched_policy_ids ?? [];
  const units = heldUnits(ids, policies);
  if (units.length === 1)
    return h(
      'span',
      { class: 'word', dataset: { unit: units[0] } },
      formatAmount(d.amount, /** @type {string} */ (units[0])),
    );
  const plain = d.amount.toLocaleString('en', { maximumFractionDigits: 6 });
  const unread = ids.length > 0 && ids.every((id) => !policies.has(id));
  const [mark, why] = unread
    ? [
        ' (unit unknown)',
        'the budgets of the matched policies name the unit, and this key may not read policies (policies:read)',
      ]
    : units.length
      ? [` ${units.join('/')}`, `in one of ${units.join(', ')}`]
      : [' (no unit)', 'no budget of a matched policy names its unit'];
  return h('span', { class: 'word', title: `${plain}: ${why}` }, plain, h('span', { class: 'muted' }, mark));
}
