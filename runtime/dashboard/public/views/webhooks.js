// @ts-check
// Webhook endpoints, and one endpoint's deliveries with their retry history and a
// Replay button.
import { api, describe } from '../api.js';
import { failure, h, long, say, table, time, timeCell } from '../dom.js';
import { moreButton, pager } from '../list.js';

/** @typedef {import('../api.js').WebhookEndpoint} WebhookEndpoint */
/** @typedef {import('../api.js').Delivery} Delivery */

/**
 * A delivery's attempts as a collapsible list, or "not attempted yet".
 * @param {Delivery} d
 * @returns {HTMLElement | string}
 */
function attemptsHistory(d) {
  if (!d.attempts.length) return 'not attempted yet';
  return h(
    'details',
    {},
    h('summary', {}, `${d.attempts.length} attempt${d.attempts.length === 1 ? '' : 's'}`),
    h(
      'ol',
      {},
      d.attempts.map((a) =>
        h(
          'li',
          { class: 'wrap' },
          `${time(a.started_at)}: ${a.status_code ?? 'no answer'}${a.error ? ` (${a.error})` : ''}, ${a.duration_ms ?? '?'} ms${a.next_attempt_at ? `; next ${time(a.next_attempt_at)}` : ''}`,
        ),
      ),
    ),
  );
}

/**
 * Draws the webhooks view into `root`; answers a function that stops it (nothing to stop).
 * Example: `const stop = webhooksView(byId('view'));`
 * @param {HTMLElement} root
 * @returns {() => void}
 */
export function webhooksView(root) {
  const body = h('div');
  const deliveries = h('section', { id: 'deliveries', 'aria-label': 'Deliveries' });
  /** @type {import('../list.js').Pager<WebhookEndpoint>} */
  const endpoints = pager('/v1/webhooks', 50, (w) => w.id);

  /** @param {WebhookEndpoint} endpoint */
  const showDeliveries = async (endpoint) => {
    const base = `/v1/webhooks/${encodeURIComponent(endpoint.id)}/deliveries`;
    /** @type {import('../list.js').Pager<Delivery>} */
    const list = pager(base, 50, (d) => d.id);
    const render = () => {
      const rows = list.items.map((d) =>
        h(
          'tr',
          { dataset: { id: d.id, status: d.status } },
          timeCell(d.created_at),
          h('td', {}, d.event_type),
          h('td', { class: 'mono' }, long(d.event_id)),
          h('td', {}, h('span', { class: `state ${d.status}` }, d.status)),
          h('td', {}, d.status_code ?? '—'),
          h('td', {}, d.error == null ? '—' : long(d.error)),
          timeCell(d.next_attempt_at),
          h('td', {}, attemptsHistory(d)),
          h('td', {}, d.replay_of ? long(`replay of ${d.replay_of}`) : ''),
          h(
            'td',
            { class: 'actions' },
            h('button', { type: 'button', onclick: () => replay(d), 'aria-label': `Replay ${d.id}` }, 'Replay'),
          ),
        ),
      );
      deliveries.replaceChildren(
        h('h3', { class: 'wrap' }, `Deliveries to ${endpoint.url}`),
        h('button', { type: 'button', onclick: () => showDeliveries(endpoint) }, 'Refresh'),
        list.items.length
          ? table(
              'Deliveries, newest first',
              [
                'Created (UTC)',
                'Event',
                'Event id',
                'Status',
                'HTTP',
                'Error',
                'Next attempt (UTC)',
                'History',
                '',
                '',
              ],
              rows,
            )
          : h('p', {}, 'No deliveries yet.'),
        moreButton(list, render),
      );
    };
    /** @param {Delivery} d */
    const replay = async (d) => {
      try {
        const copy = /** @type {Delivery} */ (await api('POST', `${base}/${encodeURIComponent(d.id)}/replay`));
        say(`Delivery ${d.id} replayed as ${copy.id}.`);
        await list.first();
        render();
      } catch (e) {
        say(`Could not replay ${d.id}: ${describe(e)}`, 'error');
      }
    };
    try {
      await list.first();
      render();
    } catch (e) {
      deliveries.replaceChildren(failure(describe(e)));
    }
  };

  const render = () => {
    const rows = endpoints.items.map((w) =>
      h(
        'tr',
        { dataset: { id: w.id } },
        h('th', { scope: 'row' }, long(w.url)),
        h('td', {}, long(w.events.join(', '))),
        h('td', {}, h('span', { class: `state ${w.status}` }, w.status)),
        h('td', {}, w.description == null ? '' : long(w.description)),
        h(
          'td',
          { class: 'actions' },
          h(
            'button',
            { type: 'button', onclick: () => showDeliveries(w), 'aria-label': `Deliveries of ${w.url}` },
            'Deliveries',
          ),
        ),
      ),
    );
    body.replaceChildren(
      endpoints.items.length
        ? table('Webhook endpoints', ['URL', 'Events', 'Status', 'Description', ''], rows)
        : h('p', {}, 'No webhook endpoints (create one with POST /v1/webhooks).'),
      moreButton(endpoints, render),
    );
  };

  root.replaceChildren(h('h2', {}, 'Webhooks'), body, deliveries);
  endpoints.first().then(render, (e) => body.replaceChildren(failure(describe(e))));
  return () => {};
}
