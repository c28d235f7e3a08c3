// @ts-check
// The review queue: open reviews first (oldest first), each with what the agent
// asked (agent, action, resource, amount, the matched policies by name, the
// request's context) and, while open, Approve and Deny with a note. The reviewer's
// name is kept for this tab's session. Approved and denied reviews are listed too.
import { api, describe } from '../api.js';
import { detailsButton, reviewLine } from '../detail.js';
import { failure, h, long, say, table, time } from '../dom.js';
import { moreButton, pager } from '../list.js';
import { policyNames, policyRefs } from '../policy-names.js';
import { refreshReviewCount } from '../review-count.js';

/** @typedef {import('../api.js').Decision} Decision */

const REVIEWER_STORE = 'agent-authz.reviewer';
const POLL_MS = 3000;

/**
 * Draws the reviews view into `root`; answers a function that stops its polling.
 * `#reviews/<decision id>[/approve|deny]` (the links of a chat notification)
 * brings that review into view with its button focused: nothing is sent until
 * the reviewer clicks.
 * Example: `const stop = reviewsView(byId('view'), ['dec_1', 'approve']);`
 * @param {HTMLElement} root
 * @param {string[]} [target]
 * @returns {() => void}
 */
export function reviewsView(root, target = []) {
  const [targetId, targetVerdict] = target;
  const reviewer = h('input', { id: 'reviewer-name', type: 'text', autocomplete: 'name', value: sessionStorage.getItem(REVIEWER_STORE) ?? '' });
  reviewer.addEventListener('input', () => sessionStorage.setItem(REVIEWER_STORE, reviewer.value.trim()));
  const status = h('select', { id: 'review-status' }, ['open', 'approved', 'denied'].map((s) => h('option', { value: s }, s)));
  const body = h('div');
  /** Notes typed but not sent yet, by decision id (kept across redraws). */
  const notes = new Map();
  /** @type {Map<string, string>} */
  let names = new Map();
  /** @type {import('../list.js').Pager<Decision>} */
  let list = pager('/v1/reviews?status=open', 50, (d) => d.id);

  /**
   * @param {Decision} d
   * @param {'approve' | 'deny'} verdict
   */
  const decideOn = async (d, verdict) => {
    const name = reviewer.value.trim();
    if (!name) {
      say('Enter your name as the reviewer first.', 'error');
      reviewer.focus();
      return;
    }
    const note = (notes.get(d.id) ?? '').trim();
    try {
      const after = /** @type {Decision} */ (await api('POST', `/v1/decisions/${encodeURIComponent(d.id)}/review`, { body: { verdict, reviewer: name, ...(note ? { note } : {}) } }));
      notes.delete(d.id);
      say(`Decision ${d.id} ${after.review?.status ?? verdict}${after.effect === 'deny' ? ` (${after.reason})` : ''}.`);
      await load();
      await refreshReviewCount();
    } catch (e) {
      say(`Could not ${verdict} ${d.id}: ${describe(e)}`, 'error');
    }
  };

  /** @param {Decision} d */
  const verdictCell = (d) => {
    if (d.review?.status !== 'open') return h('td', {}, h('span', { class: 'review-line' }, reviewLine(d.review)));
    const note = h('input', { type: 'text', class: 'note', 'aria-label': `Note for ${d.id}`, value: notes.get(d.id) ?? '', maxlength: 2000 });
    note.addEventListener('input', () => notes.set(d.id, note.value));
    return h('td', { class: 'actions' },
      note,
      h('button', { type: 'button', class: 'approve', onclick: () => decideOn(d, 'approve'), 'aria-label': `Approve ${d.id}` }, 'Approve'),
      h('button', { type: 'button', class: 'deny', onclick: () => decideOn(d, 'deny'), 'aria-label': `Deny ${d.id}` }, 'Deny'),
    );
  };

  const render = () => {
    const rows = list.items.map((d) =>
      h('tr', { dataset: { id: d.id } },
        h('td', { class: 'time' }, time(d.evaluated_at)),
        h('td', {}, long(d.agent_id)),
        h('td', {}, long(d.action)),
        h('td', {}, d.resource == null ? '—' : long(d.resource)),
        h('td', {}, d.amount == null ? '—' : String(d.amount)),
        h('td', {}, policyRefs(d.metadata?.matched_policy_ids ?? [], names)),
        h('td', {}, d.context ? h('details', {}, h('summary', {}, 'context'), h('pre', { class: 'context' }, JSON.stringify(d.context, null, 2))) : '—'),
        h('td', { class: 'time' }, d.status === 'awaiting_approval' ? `waits until ${time(d.approval_expires_at)}` : h('span', { class: `state ${d.status}` }, d.status)),
        verdictCell(d),
        h('td', {}, detailsButton(d.id)),
      ),
    );
    const caption = status.value === 'open' ? 'Open reviews, oldest first' : `${status.value[0]?.toUpperCase()}${status.value.slice(1)} reviews, newest first`;
    body.replaceChildren(
      list.items.length
        ? table(caption, ['Asked (UTC)', 'Agent', 'Action', 'Resource', 'Amount', 'Matched policies', 'Context', 'Status', status.value === 'open' ? 'Verdict (note optional)' : 'Review', ''], rows)
        : h('p', {}, status.value === 'open' ? 'No review is waiting.' : `No ${status.value} reviews.`),
      moreButton(list, render),
    );
  };

  /** The review a link named: into view, its Approve or Deny button focused (or a word when it is not open any more). */
  const showTarget = () => {
    const row = [...body.querySelectorAll('tr')].find((tr) => tr.dataset.id === targetId);
    if (!row) {
      say(`Decision ${targetId} is not waiting for review any more (see Approved and Denied).`);
      return;
    }
    row.classList.add('target');
    row.scrollIntoView({ block: 'center' });
    const button = row.querySelector(targetVerdict === 'deny' ? 'button.deny' : 'button.approve');
    if (button instanceof HTMLButtonElement) button.focus();
  };

  const load = async () => {
    const mine = pager(`/v1/reviews?status=${status.value}`, 50, (d) => d.id);
    list = mine;
    try {
      [names] = await Promise.all([policyNames(), mine.first()]);
      if (list === mine) render();
      if (list === mine && targetId) showTarget();
    } catch (e) {
      if (list === mine) body.replaceChildren(failure(describe(e)));
    }
  };
  status.addEventListener('change', load);

  // New reviews arrive (and others are answered) while the page is open.
  const timer = setInterval(async () => {
    if (document.hidden || status.value !== 'open' || body.contains(document.activeElement)) return;
    const current = list;
    const before = current.items.map((d) => d.id).join();
    try {
      await current.first();
      if (list === current && current.items.map((d) => d.id).join() !== before) render();
    } catch {
      /* the next tick tries again */
    }
  }, POLL_MS);

  root.replaceChildren(
    h('h2', {}, 'Reviews'),
    h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() },
      h('label', { for: 'reviewer-name' }, 'Your name (reviewer)'), reviewer,
      h('label', { for: 'review-status' }, 'Show'), status,
    ),
    body,
  );
  load();
  return () => clearInterval(timer);
}
