// @ts-check
// The review queue. Open reviews in two groups: first those an agent waits on
// (approval before the action), soonest deadline first, then those of actions
// already allowed (after the fact), oldest first. Each row shows what the agent
// asked (agent, action, resource, amount with its unit, the matched policies by
// name, the request's context, its session and the labels it was decided with) and Approve and Deny with a note; an error of a
// verdict (review.self_review, say) shows at its row. The reviewer's name is kept
// for this tab's session. Approved and denied reviews are listed too, each with
// its own review state.
import { ApiError, api, describe } from '../api.js';
import { detailsButton, reviewLine } from '../detail.js';
import { failure, h, long, say, table, time, words } from '../dom.js';
import { moreButton, pager, readAll } from '../list.js';
import { policyIndex, policyNames, policyRefs } from '../policy-names.js';
import { refreshReviewCount } from '../review-count.js';
import { labelBadges, sessionLink } from '../session-links.js';
import { amountText } from '../units.js';

/** @typedef {import('../api.js').Decision} Decision */
/** @typedef {import('../api.js').Policy} Policy */

const REVIEWER_STORE = 'agent-authz.reviewer';
const POLL_MS = 3000;
/** Open reviews read at most (they are grouped and sorted here, so all of them are read). */
const OPEN_CAP = 1000;

/**
 * Open reviews in the order a reviewer takes them: those an agent waits on
 * (awaiting approval) first, the soonest deadline first; then the others, in the
 * queue's order (oldest first).
 * Example: `const { waiting, afterwards } = queueOrder(page.data);`
 * @param {Decision[]} open
 * @returns {{ waiting: Decision[], afterwards: Decision[] }}
 */
export function queueOrder(open) {
  const waiting = open.filter((d) => d.status === 'awaiting_approval');
  waiting.sort((a, b) => (a.approval_expires_at ?? '').localeCompare(b.approval_expires_at ?? ''));
  return { waiting, afterwards: open.filter((d) => d.status !== 'awaiting_approval') };
}

/**
 * What a failed verdict means for the reviewer, in a line: the API's code and
 * message, and what to do about it.
 * @param {unknown} e
 * @param {'approve' | 'deny'} verdict
 * @returns {string}
 */
export function verdictError(e, verdict) {
  const not = `Not ${verdict === 'approve' ? 'approved' : 'denied'}`;
  const reviewerKey = 'sign in with a reviewer key (scopes reviews:read and reviews:write)';
  if (e instanceof ApiError && e.code === 'review.self_review')
    return `${not} (${e.code}): this key made the decision, and no key reviews its own decisions; ${reviewerKey}.`;
  if (e instanceof ApiError && e.code === 'auth.scope_insufficient')
    return `${not} (${e.code}): this key may not review; ${reviewerKey}.`;
  return `${not}: ${describe(e)}`;
}

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
  const reviewer = h('input', {
    id: 'reviewer-name',
    type: 'text',
    autocomplete: 'name',
    value: sessionStorage.getItem(REVIEWER_STORE) ?? '',
  });
  reviewer.addEventListener('input', () => sessionStorage.setItem(REVIEWER_STORE, reviewer.value.trim()));
  const status = h(
    'select',
    { id: 'review-status' },
    ['open', 'approved', 'denied'].map((s) => h('option', { value: s }, s)),
  );
  const body = h('div');
  /** Notes typed but not sent yet, by decision id (kept across redraws). */
  const notes = new Map();
  /** The last verdict error of a row, by decision id (kept across redraws). */
  const errors = new Map();
  /** @type {Map<string, string>} */
  let names = new Map();
  /** @type {Map<string, Policy>} */
  let policies = new Map();
  /** The open reviews as read, and whether there were more than OPEN_CAP. */
  let open = { items: /** @type {Decision[]} */ ([]), truncated: false };
  /** The approved or denied reviews (newest first, paged). */
  /** @type {import('../list.js').Pager<Decision>} */
  let done = pager('/v1/reviews?status=approved', 50, (d) => d.id);
  /** Which list the view shows; a newer choice wins over a load still under way. */
  let shown = 'open';

  /**
   * Shows a verdict's error at its row (in view), or clears it.
   * @param {string} id
   * @param {string | null} message
   */
  const rowError = (id, message) => {
    if (message) errors.set(id, message);
    else errors.delete(id);
    const row = [...body.querySelectorAll('tr')].find((tr) => tr.dataset.id === id);
    const slot = row?.querySelector('.row-error');
    if (!row || !(slot instanceof HTMLElement)) return;
    slot.textContent = message ?? '';
    slot.hidden = !message;
    if (message) slot.scrollIntoView({ block: 'nearest' });
  };

  /**
   * @param {Decision} d
   * @param {'approve' | 'deny'} verdict
   */
  const decideOn = async (d, verdict) => {
    const name = reviewer.value.trim();
    if (!name) {
      rowError(d.id, 'Enter your name as the reviewer (at the top of the page) first.');
      reviewer.focus({ preventScroll: true });
      return;
    }
    rowError(d.id, null);
    const note = (notes.get(d.id) ?? '').trim();
    try {
      const after = /** @type {Decision} */ (
        await api('POST', `/v1/decisions/${encodeURIComponent(d.id)}/review`, {
          body: { verdict, reviewer: name, ...(note ? { note } : {}) },
        })
      );
      notes.delete(d.id);
      say(`Decision ${d.id} ${after.review?.status ?? verdict}${after.effect === 'deny' ? ` (${after.reason})` : ''}.`);
      await load();
      await refreshReviewCount();
    } catch (e) {
      rowError(d.id, verdictError(e, verdict));
    }
  };

  /** @param {Decision} d */
  const verdictCell = (d) => {
    const note = h('input', {
      type: 'text',
      class: 'note',
      'aria-label': `Note for ${d.id}`,
      placeholder: 'note',
      value: notes.get(d.id) ?? '',
      maxlength: 2000,
    });
    note.addEventListener('input', () => notes.set(d.id, note.value));
    const message = errors.get(d.id);
    return h(
      'td',
      { class: 'verdict' },
      note,
      h(
        'div',
        { class: 'buttons' },
        h(
          'button',
          { type: 'button', class: 'approve', onclick: () => decideOn(d, 'approve'), 'aria-label': `Approve ${d.id}` },
          'Approve',
        ),
        h(
          'button',
          { type: 'button', class: 'deny', onclick: () => decideOn(d, 'deny'), 'aria-label': `Deny ${d.id}` },
          'Deny',
        ),
        detailsButton(d.id),
      ),
      h('p', { class: 'row-error error', role: 'alert', hidden: !message }, message ?? ''),
    );
  };

  /** The cells every list shows: what the agent asked (the request's context under the action; its session under the agent). @param {Decision} d */
  const askedCells = (d) => [
    h('td', {}, long(d.agent_id), sessionOf(d)),
    h('td', {}, long(d.action), contextOf(d)),
    h('td', {}, d.resource == null ? '—' : long(d.resource)),
    h('td', { class: 'amount' }, amountText(d, policies)),
    h('td', {}, policyRefs(d.metadata?.matched_policy_ids ?? [], names)),
  ];
  /**
   * The decision's session (a link to its view) and the labels it was decided with (why a label rule held it).
   * @param {Decision} d
   */
  const sessionOf = (d) =>
    d.session_id
      ? h(
          'div',
          { class: 'session' },
          'session ',
          sessionLink(d.session_id),
          d.metadata?.session_labels
            ? h(
                'div',
                { class: 'decided-with', title: 'The labels of the session this decision was decided with' },
                'labels: ',
                labelBadges(d.metadata.session_labels),
              )
            : '',
        )
      : '';
  /** @param {Decision} d */
  const contextOf = (d) =>
    d.context
      ? h(
          'details',
          { class: 'context' },
          h('summary', {}, 'context'),
          h('pre', { class: 'context' }, JSON.stringify(d.context, null, 2)),
        )
      : '';
  /** A time that may wrap between its date and its time of day, never inside either. @param {string | null | undefined} iso */
  const when = (iso) => words(time(iso));
  /** @param {Decision} d */
  const rowAttrs = (d) => ({
    dataset: {
      id: d.id,
      reviewState: d.review?.status ?? 'none',
      kind: d.approval_expires_at ? 'approval' : 'after-the-fact',
    },
  });

  const renderOpen = () => {
    const { waiting, afterwards } = queueOrder(open.items);
    const waitingRows = waiting.map((d) =>
      h(
        'tr',
        rowAttrs(d),
        h('td', { class: 'deadline' }, when(d.approval_expires_at)),
        ...askedCells(d),
        verdictCell(d),
      ),
    );
    const afterRows = afterwards.map((d) =>
      h('tr', rowAttrs(d), h('td', {}, when(d.evaluated_at)), ...askedCells(d), verdictCell(d)),
    );
    const columns = ['Agent', 'Action', 'Resource', 'Amount', 'Matched policies', 'Verdict (note optional)'];
    body.replaceChildren(
      h(
        'section',
        { id: 'reviews-waiting', 'aria-labelledby': 'reviews-waiting-title' },
        h('h3', { id: 'reviews-waiting-title' }, `Waiting for approval (${waiting.length})`),
        h(
          'p',
          { class: 'muted' },
          'An agent waits on each of these: approve or deny before the deadline, or the action is denied (review.timeout). Soonest deadline first.',
        ),
        waiting.length
          ? table({ labelledBy: 'reviews-waiting-title' }, ['Deadline (UTC)', ...columns], waitingRows)
          : h('p', {}, 'No agent is waiting for an approval.'),
      ),
      h(
        'section',
        { id: 'reviews-after', 'aria-labelledby': 'reviews-after-title' },
        h('h3', { id: 'reviews-after-title' }, `After the fact (${afterwards.length})`),
        h(
          'p',
          { class: 'muted' },
          'Actions already allowed: a verdict records your judgement and changes nothing else. Oldest first.',
        ),
        afterwards.length
          ? table({ labelledBy: 'reviews-after-title' }, ['Asked (UTC)', ...columns], afterRows)
          : h('p', {}, 'No review after the fact is open.'),
      ),
      open.truncated ? h('p', { class: 'muted' }, `Showing the oldest ${OPEN_CAP} open reviews only.`) : '',
    );
  };

  const renderDone = () => {
    const rows = done.items.map((d) =>
      h(
        'tr',
        rowAttrs(d),
        h('td', {}, when(d.review?.reviewed_at)),
        ...askedCells(d),
        h(
          'td',
          { class: 'review-line' },
          h('span', { class: `state ${d.review?.status ?? ''}` }, d.review?.status ?? '—'),
          reviewLine(d.review).replace(/^(approved|denied)/, ''),
          h('br'),
          h('span', { class: 'muted' }, d.approval_expires_at ? 'the agent waited for it' : 'after the fact'),
        ),
        h('td', {}, detailsButton(d.id)),
      ),
    );
    const title = `${shown[0]?.toUpperCase()}${shown.slice(1)} reviews, newest first`;
    body.replaceChildren(
      done.items.length
        ? table(
            title,
            ['Reviewed (UTC)', 'Agent', 'Action', 'Resource', 'Amount', 'Matched policies', 'Review', ''],
            rows,
          )
        : h('p', {}, `No ${shown} reviews.`),
      moreButton(done, renderDone),
    );
  };

  const render = () => (shown === 'open' ? renderOpen() : renderDone());

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

  /** Reads the list chosen (and the policies) and draws it. */
  const load = async () => {
    const mine = status.value;
    shown = mine;
    try {
      if (mine === 'open') {
        const [read, index] = await Promise.all([
          readAll('/v1/reviews?status=open', (/** @type {Decision} */ d) => d.id, OPEN_CAP),
          policyIndex(),
        ]);
        if (shown !== mine) return;
        open = /** @type {{ items: Decision[], truncated: boolean }} */ (read);
        policies = index;
      } else {
        const list = pager(`/v1/reviews?status=${mine}`, 50, (/** @type {Decision} */ d) => d.id);
        const [, index] = await Promise.all([list.first(), policyIndex()]);
        if (shown !== mine) return;
        done = list;
        policies = index;
      }
      names = await policyNames();
      render();
      if (targetId) showTarget();
    } catch (e) {
      if (shown === mine) body.replaceChildren(failure(describe(e)));
    }
  };
  status.addEventListener('change', load);

  // New reviews arrive (and others are answered) while the page is open; not redrawn
  // while the reviewer is typing a note or on a button of the list.
  const timer = setInterval(async () => {
    if (document.hidden || shown !== 'open' || body.contains(document.activeElement)) return;
    const before = open.items.map((d) => `${d.id}:${d.status}`).join();
    try {
      const read = await readAll('/v1/reviews?status=open', (/** @type {Decision} */ d) => d.id, OPEN_CAP);
      if (shown !== 'open' || body.contains(document.activeElement)) return;
      open = /** @type {{ items: Decision[], truncated: boolean }} */ (read);
      if (open.items.map((d) => `${d.id}:${d.status}`).join() !== before) renderOpen();
    } catch {
      /* the next tick tries again */
    }
  }, POLL_MS);

  root.replaceChildren(
    h('h2', {}, 'Reviews'),
    h(
      'form',
      { class: 'filters toolbar', onsubmit: (e) => e.preventDefault() },
      h('label', { for: 'reviewer-name' }, 'Your name (reviewer)'),
      reviewer,
      h('label', { for: 'review-status' }, 'Show'),
      status,
      h(
        'span',
        { class: 'muted' },
        'Answering needs a reviewer key (scopes reviews:read and reviews:write), not the key the agents decide with.',
      ),
    ),
    body,
  );
  load();
  return () => clearInterval(timer);
}
