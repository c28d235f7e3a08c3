// @ts-check
// One decision in a panel (a modal <dialog>): its outcome and why (the deciding and
// matched policies, by name, and the warnings), the session's labels it was
// decided with and a link to its session, what the gateway read in its result,
// its review, its expiry and the request's context. Opened from every list of decisions.
import { api, describe } from './api.js';
import { h, long, time } from './dom.js';
import { policyIndex, policyNames, policyRef, policyRefs } from './policy-names.js';
import { labelBadges, sessionLink } from './session-links.js';
import { amountText } from './units.js';

/** @typedef {import('./api.js').Decision} Decision */

/** @type {{ dialog: HTMLDialogElement, body: HTMLElement } | null} */
let panel = null;

/** The panel, made on first use. */
function thePanel() {
  if (panel) return panel;
  const body = h('div', { id: 'decision-panel-body' });
  const close = h('button', { type: 'button' }, 'Close');
  const dialog = h(
    'dialog',
    { id: 'decision-panel', 'aria-labelledby': 'decision-panel-title' },
    h('h2', { id: 'decision-panel-title' }, 'Decision'),
    body,
    h('div', { class: 'actions' }, close),
  );
  close.addEventListener('click', () => dialog.close());
  // A link in the panel (its session) leads to another view: the panel closes.
  body.addEventListener('click', (event) => {
    if (event.target instanceof Element && event.target.closest('a[href^="#"]')) dialog.close();
  });
  document.body.append(dialog);
  panel = { dialog, body };
  return panel;
}

/**
 * A term and its description in the panel's list.
 * @param {string} term
 * @param {import('./dom.js').Child} value
 * @returns {HTMLElement[]}
 */
const item = (term, value) => [h('dt', {}, term), h('dd', {}, value ?? '—')];

/**
 * A review as one line: `approved by alice (2026-11-21 10:05:00Z): note`.
 * @param {import('./api.js').Review | null | undefined} r
 * @returns {string}
 */
export function reviewLine(r) {
  if (!r) return 'none (not a review decision)';
  if (r.status === 'open') return 'open: waiting for a reviewer';
  const who = r.reviewer ? ` by ${r.reviewer}` : ' (nobody answered in time)';
  return `${r.status}${who} at ${time(r.reviewed_at)}${r.note ? `: ${r.note}` : ''}`;
}

/**
 * A history value a candidate policy read, as one line: `count('x.go', '1h', 'session') = 3`.
 * @param {{ fn: string, actions: string[], window: string, scope: string, match?: string[], value: number }} r
 * @returns {string}
 */
export function historyLine(r) {
  const quote = (/** @type {string} */ s) => `'${s}'`;
  const actions = r.actions.length === 1 ? quote(r.actions[0] ?? '') : `[${r.actions.map(quote).join(', ')}]`;
  const match = r.match?.length ? `, [${r.match.map(quote).join(', ')}]` : '';
  return `history.${r.fn}(${actions}, ${quote(r.window)}, ${quote(r.scope)}${match}) = ${r.value}`;
}

/**
 * What the gateway read in the decision's result, as one line: `labels untrusted, pii;
 * found pii/email x1 (redact)`; `not recorded` before (or without) a record.
 * @param {Decision['output']} o
 * @returns {string}
 */
export function outputLine(o) {
  if (!o) return 'not recorded (no result read, or nothing to record)';
  const found = o.findings.map((f) => `${f.kind}/${f.rule} x${f.count} (${f.action})`).join(', ');
  return `labels ${o.labels.length ? o.labels.join(', ') : 'none'}${found ? `; found ${found}` : ''}`;
}

/**
 * The decision's fields as a description list.
 * @param {Decision} d
 * @param {Map<string, string>} names
 * @param {Map<string, import('./api.js').Policy>} [policies] for the amount's unit
 * @returns {HTMLElement}
 */
export function decisionDetail(d, names, policies = new Map()) {
  const warnings = d.metadata?.warnings ?? [];
  return h(
    'dl',
    { class: 'detail', dataset: { id: d.id } },
    item('Id', h('span', { class: 'mono' }, long(d.id))),
    item('Effect', h('span', { class: `effect ${d.effect}` }, d.effect)),
    item('Reason', d.reason),
    item('Status', h('span', { class: `state ${d.status}` }, d.status)),
    item('Agent', long(d.agent_id)),
    item('Action', long(d.action)),
    item('Resource', d.resource == null ? '—' : long(d.resource)),
    item('Amount', amountText(d, policies)),
    item('Deciding policy', policyRef(d.policy_id, names)),
    item('Matched policies', policyRefs(d.metadata?.matched_policy_ids ?? [], names)),
    item(
      'Warnings',
      warnings.length
        ? h(
            'ul',
            { class: 'warnings' },
            warnings.map((w) => h('li', {}, `${w.code}: ${w.message}`)),
          )
        : 'none',
    ),
    item(
      'History read',
      d.metadata?.history?.length
        ? h(
            'ul',
            { class: 'history' },
            d.metadata.history.map((r) => h('li', { class: 'mono' }, historyLine(r))),
          )
        : 'none',
    ),
    item('Review', h('span', { class: 'review-line' }, reviewLine(d.review))),
    item('Approval deadline', d.approval_expires_at ? `${time(d.approval_expires_at)}` : 'none (no approval asked)'),
    item('Evaluated', time(d.evaluated_at)),
    item('Expires', `${time(d.expires_at)}${d.ttl_seconds ? ` (TTL ${d.ttl_seconds} s)` : ''}`),
    item('Resolved', time(d.resolved_at)),
    item('Session', d.session_id ? sessionLink(d.session_id) : '—'),
    item(
      'Session labels',
      d.metadata?.session_labels
        ? h('span', { class: 'decided-with' }, labelBadges(d.metadata.session_labels), ' (decided with these)')
        : 'not read (no candidate policy reads labels)',
    ),
    item('Result read', h('span', { class: 'output-line' }, outputLine(d.output))),
    item('On behalf of', d.on_behalf_of ?? '—'),
    item('Context', d.context ? h('pre', { class: 'context' }, JSON.stringify(d.context, null, 2)) : '—'),
  );
}

/**
 * Opens the panel on the decision with this id, read fresh from the API.
 * Example: `h('button', { onclick: () => openDecision(d.id) }, 'Details')`
 * @param {string} id
 * @returns {Promise<void>}
 */
export async function openDecision(id) {
  const { dialog, body } = thePanel();
  body.replaceChildren(h('p', {}, 'Loading…'));
  if (!dialog.open) dialog.showModal();
  try {
    const [d, names, policies] = await Promise.all([
      api('GET', `/v1/decisions/${encodeURIComponent(id)}`),
      policyNames(),
      policyIndex(),
    ]);
    body.replaceChildren(decisionDetail(/** @type {Decision} */ (d), names, policies));
  } catch (e) {
    body.replaceChildren(h('p', { class: 'error' }, describe(e)));
  }
}

/**
 * The "Details" button of a decision's row.
 * @param {string} id
 * @returns {HTMLButtonElement}
 */
export function detailsButton(id) {
  return h('button', { type: 'button', onclick: () => openDecision(id), 'aria-label': `Details of ${id}` }, 'Details');
}
