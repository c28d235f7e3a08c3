// @ts-check
// Budget usage this period: consumed and held against each limit, with the period end;
// each row's scope and key (an agent; an agent's session; a user, across agents).
import { api, describe } from '../api.js';
import { failure, h, long, table, timeCell } from '../dom.js';
import { policyNames, policyRef } from '../policy-names.js';
import { budgetUsage } from '../units.js';

/** @typedef {import('../api.js').Budget} Budget */

/**
 * Whose spend a row counts, as a cell: the agent; the agent and its session; the user.
 * Example: `keyCell({ scope: 'session', agent_id: 'bot', session_id: 'run_1' })` shows "bot / session run_1".
 * @param {Budget} b
 * @returns {HTMLElement}
 */
export function keyCell(b) {
  const scope = b.scope ?? 'agent';
  if (scope === 'user') return h('td', { 'data-key': 'user' }, 'user ', long(b.on_behalf_of ?? ''));
  if (scope === 'session')
    return h('td', { 'data-key': 'session' }, long(b.agent_id ?? ''), ' / session ', long(b.session_id ?? ''));
  return h('td', { 'data-key': 'agent' }, long(b.agent_id ?? ''));
}

/**
 * Draws the budgets view into `root`; answers a function that stops it (nothing to stop).
 * Example: `const stop = budgetsView(byId('view'));`
 * @param {HTMLElement} root
 * @returns {() => void}
 */
export function budgetsView(root) {
  const body = h('div');
  /**
   * @param {Budget[]} items
   * @param {Map<string, string>} names
   */
  const render = (items, names) => {
    const rows = items.map((b) => {
      const used = b.consumed + b.held;
      return h(
        'tr',
        {},
        h('td', {}, policyRef(b.policy_id, names)),
        h('td', {}, b.scope ?? 'agent'),
        keyCell(b),
        h(
          'td',
          {},
          h('meter', {
            min: 0,
            max: b.limit,
            value: Math.min(used, b.limit),
            high: (b.threshold_alert ?? 0.8) * b.limit,
            optimum: 0,
            'aria-label': `${used} of ${b.limit} ${b.unit}`,
          }),
          ` ${budgetUsage(b)}`,
        ),
        h('td', {}, b.period),
        timeCell(b.period_resets_at),
        h('td', {}, h('span', { class: `state ${b.status}` }, b.status)),
      );
    });
    body.replaceChildren(
      items.length
        ? table(
            'Budget usage this period',
            ['Policy', 'Scope', 'Counted for', 'Usage', 'Period', 'Period ends (UTC)', 'Status'],
            rows,
          )
        : h('p', {}, 'No budget has been used this period.'),
    );
  };
  root.replaceChildren(h('h2', {}, 'Budgets'), body);
  Promise.all([api('GET', '/v1/budgets?limit=100'), policyNames()]).then(
    ([page, names]) => render(/** @type {import('../api.js').Page<Budget>} */ (page).data, names),
    (e) => body.replaceChildren(failure(describe(e))),
  );
  return () => {};
}
