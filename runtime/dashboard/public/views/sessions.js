// @ts-check
// One session (an agent run: the decisions with one session_id): the labels it
// holds for what the agent read, each with where it came from (a policy, the API,
// the MCP gateway; the decision that added it, its detail, when), and the
// session's decisions, newest first. `#sessions/<session id>`; the decision panel
// and the review queue link here.
import { ApiError, api, describe } from '../api.js';
import { detailsButton } from '../detail.js';
import { decisionLeadCells, failure, h, long, table, time, timeCell, updatedNow, words } from '../dom.js';
import { moreButton, pager } from '../list.js';
import { labelBadges, sessionHref } from '../session-links.js';

/** @typedef {import('../api.js').Decision} Decision */
/** @typedef {import('../api.js').Session} Session */
/** @typedef {import('../api.js').SessionLabel} SessionLabel */

const POLL_MS = 3000;
const PAGE = 50;

/**
 * Where a label came from, in words: `the MCP gateway, reading the result of mail.read
 * (tool inbox_read)` (the decision's action and tool, when that decision is among those read).
 * Example: `labelSource({ label: 'private', source: 'api', added_at: '...' }, new Map())`
 * @param {SessionLabel} l
 * @param {Map<string, Decision>} decisions by id
 * @returns {string}
 */
export function labelSource(l, decisions) {
  const d = l.decision_id ? decisions.get(l.decision_id) : undefined;
  const mcp = d?.context?.mcp;
  const tool = mcp && typeof mcp === 'object' && 'tool' in mcp ? ` (tool ${String(mcp.tool)})` : '';
  const what = d ? `${d.action}${tool}` : 'its decision';
  if (l.source === 'gateway') return `the MCP gateway, reading the result of ${what}`;
  if (l.source === 'policy') return `the labels of the policy that allowed ${what}`;
  return 'a tool wrapper, through the API (POST /v1/sessions/:id/labels)';
}

/**
 * Draws the view of session `rest[0]` into `root` (a form to name one when none is);
 * answers a function that stops its polling.
 * Example: `const stop = sessionsView(byId('view'), ['run-2']);`
 * @param {HTMLElement} root
 * @param {string[]} [rest]
 * @returns {() => void}
 */
export function sessionsView(root, rest = []) {
  const [id = ''] = rest;
  const input = h('input', { id: 'session-id', type: 'search', autocomplete: 'off', value: id, required: true });
  /** @param {Event} e */
  const go = (e) => {
    e.preventDefault();
    if (input.value.trim()) location.hash = sessionHref(input.value.trim());
  };
  const form = h(
    'form',
    { class: 'filters', onsubmit: go },
    h('label', { for: 'session-id' }, 'Session id'),
    input,
    h('button', { type: 'submit' }, 'Show'),
  );
  if (!id) {
    root.replaceChildren(
      h('h2', {}, 'Sessions'),
      form,
      h(
        'p',
        { class: 'muted' },
        'A session is one agent run: the decisions with one session_id (the MCP gateway names it). Open one from a decision or a review, or by its id.',
      ),
    );
    return () => {};
  }
  const updated = h('p', { class: 'muted', id: 'session-updated' });
  const summary = h('div', { id: 'session-summary' });
  const labels = h('section', { id: 'session-labels', 'aria-labelledby': 'session-labels-title' });
  const decisionsBody = h('div');
  /** @type {import('../list.js').Pager<Decision>} */
  const list = pager(`/v1/decisions?session_id=${encodeURIComponent(id)}`, PAGE, (d) => d.id);
  /** @type {Session | null} */
  let session = null;

  const render = () => {
    if (!session) return;
    const byId = new Map(list.items.map((d) => [d.id, d]));
    const n = session.labels.length;
    summary.replaceChildren(
      h(
        'p',
        {},
        `${session.decisions} decision${session.decisions === 1 ? '' : 's'}, the last at ${time(session.last_decision_at)}; ${n} label${n === 1 ? '' : 's'}: `,
        labelBadges(session.labels.map((l) => l.label)),
      ),
    );
    const labelRows = session.labels.map((l) =>
      h(
        'tr',
        { dataset: { label: l.label, source: l.source } },
        h('th', { scope: 'row' }, h('span', { class: 'badge label' }, l.label)),
        h('td', {}, l.source),
        h('td', { class: 'where' }, labelSource(l, byId)),
        h('td', {}, l.decision_id ? detailsButton(l.decision_id) : '—'),
        h('td', {}, l.detail ? long(l.detail) : '—'),
        timeCell(l.added_at),
      ),
    );
    labels.replaceChildren(
      h('h3', { id: 'session-labels-title' }, 'Labels: what the session has read'),
      labelRows.length
        ? table(
            { labelledBy: 'session-labels-title' },
            ['Label', 'Source', 'Where from', 'Decision', 'Detail', 'Added (UTC)'],
            labelRows,
          )
        : h('p', {}, 'No labels: nothing this session read was labelled.'),
    );
    const rows = list.items.map((d) =>
      h(
        'tr',
        { dataset: { id: d.id } },
        ...decisionLeadCells(d),
        h('td', {}, h('span', { class: `effect ${d.effect}` }, d.effect), h('br'), d.reason),
        h('td', {}, h('span', { class: `state ${d.status}` }, d.status)),
        h('td', { class: 'decided-with' }, labelBadges(d.metadata?.session_labels)),
        h('td', { class: 'result-labels' }, d.output ? labelBadges(d.output.labels) : '—'),
        h('td', {}, detailsButton(d.id)),
      ),
    );
    decisionsBody.replaceChildren(
      rows.length
        ? table(
            { labelledBy: 'session-decisions-title' },
            ['Time (UTC)', 'Agent', 'Action', 'Resource', 'Effect', 'Status', 'Decided with', 'Result labelled', ''],
            rows,
          )
        : h('p', {}, 'No decisions in this session.'),
      moreButton(list, render),
    );
  };

  /** Reads the session and its newest decisions; answers whether anything changed. */
  const read = async () => {
    const before = JSON.stringify([session, list.items]);
    const [answer] = await Promise.all([api('GET', `/v1/sessions/${encodeURIComponent(id)}`), list.first()]);
    session = /** @type {Session} */ (answer);
    updated.textContent = updatedNow();
    return JSON.stringify([session, list.items]) !== before;
  };

  read().then(render, (e) => {
    const gone = e instanceof ApiError && e.code === 'session.not_found';
    const scope = e instanceof ApiError && e.code === 'auth.scope_insufficient';
    const why = gone
      ? `No session ${id} in this environment (a session ends after a day without a decision).`
      : scope
        ? `${describe(e)}. Sessions are read with the scope decisions:read (a reviewer key may have it besides reviews:read and reviews:write).`
        : describe(e);
    summary.replaceChildren(failure(why));
  });

  // Labels and decisions arrive, and held decisions are answered, while an agent
  // runs: read again, unless older pages are shown ("Load older").
  const timer = setInterval(async () => {
    if (document.hidden || !session || list.items.length > PAGE) return;
    try {
      if (await read()) render();
    } catch {
      /* the next tick tries again; a refused key signs out in api() */
    }
  }, POLL_MS);

  root.replaceChildren(
    h('h2', {}, 'Session ', h('span', { class: 'mono' }, words(id))),
    form,
    updated,
    summary,
    labels,
    h(
      'section',
      { id: 'session-decisions', 'aria-labelledby': 'session-decisions-title' },
      h('h3', { id: 'session-decisions-title' }, 'Decisions, newest first'),
      decisionsBody,
    ),
  );
  return () => clearInterval(timer);
}
