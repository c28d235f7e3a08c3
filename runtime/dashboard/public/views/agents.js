// @ts-check
// Agents seen in this environment, revoked and restored from their rows.
import { api, describe } from '../api.js';
import { failure, h, long, say, table, timeCell } from '../dom.js';
import { moreButton, pager } from '../list.js';

/** @typedef {import('../api.js').Agent} Agent */

/**
 * Draws the agents view into `root`; answers a function that stops it (nothing to stop).
 * Example: `const stop = agentsView(byId('view'));`
 * @param {HTMLElement} root
 * @returns {() => void}
 */
export function agentsView(root) {
  const body = h('div');
  // Agents are paged by agent_id (they have no `id` field).
  /** @type {import('../list.js').Pager<Agent>} */
  const list = pager('/v1/agents', 50, (a) => a.agent_id);

  /**
   * @param {Agent} a
   * @param {'revoke' | 'restore'} verb
   */
  const setStatus = async (a, verb) => {
    try {
      const updated = /** @type {Agent} */ (await api('POST', `/v1/agents/${encodeURIComponent(a.agent_id)}/${verb}`));
      Object.assign(a, updated);
      say(`Agent ${a.agent_id} ${updated.status === 'revoked' ? 'revoked' : 'restored'}.`);
      render();
    } catch (e) {
      say(`Could not ${verb} ${a.agent_id}: ${describe(e)}`, 'error');
    }
  };

  const render = () => {
    const rows = list.items.map((a) =>
      h(
        'tr',
        { dataset: { agent: a.agent_id } },
        h('th', { scope: 'row' }, long(a.agent_id)),
        h('td', {}, h('span', { class: `state ${a.status}` }, a.status)),
        timeCell(a.first_seen_at),
        timeCell(a.revoked_at),
        h(
          'td',
          { class: 'actions' },
          a.status === 'revoked'
            ? h(
                'button',
                { type: 'button', onclick: () => setStatus(a, 'restore'), 'aria-label': `Restore ${a.agent_id}` },
                'Restore',
              )
            : h(
                'button',
                { type: 'button', onclick: () => setStatus(a, 'revoke'), 'aria-label': `Revoke ${a.agent_id}` },
                'Revoke',
              ),
        ),
      ),
    );
    body.replaceChildren(
      list.items.length
        ? table(
            'Agents seen in this environment, newest first',
            ['Agent', 'Status', 'First seen (UTC)', 'Revoked (UTC)', ''],
            rows,
          )
        : h('p', {}, 'No agent has made a request in this environment yet.'),
      moreButton(list, render),
    );
  };

  root.replaceChildren(h('h2', {}, 'Agents'), body);
  list.first().then(render, (e) => body.replaceChildren(failure(describe(e))));
  return () => {};
}
