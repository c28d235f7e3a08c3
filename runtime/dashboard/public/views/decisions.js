// @ts-check
// The decisions feed: newest first, filtered by agent, effect and reason, and kept
// live by polling for newer decisions while the tab is visible.
import { describe } from '../api.js';
import { detailsButton } from '../detail.js';
import { decisionLeadCells, failure, h, table, updatedNow } from '../dom.js';
import { moreButton, pager } from '../list.js';
import { policyIndex, policyNames, policyRef } from '../policy-names.js';
import { amountText } from '../units.js';

/** @typedef {import('../api.js').Decision} Decision */

const POLL_MS = 2000;
const REASONS = [
  'policy.matched',
  'policy.not_found',
  'policy.disabled',
  'resource.not_allowed',
  'budget.exceeded',
  'agent.revoked',
  'review.denied',
  'review.timeout',
];

/**
 * A badge when the decision's outcome with the shadow policies enabled differs; its title says how.
 * @param {Decision} d
 */
function shadowBadge(d) {
  const shadow = d.metadata?.shadow;
  if (!shadow) return '';
  const title = `With the shadow policies enabled: ${shadow.effect} (${shadow.reason})${shadow.policy_id ? ` by ${shadow.policy_id}` : ''}`;
  return h('span', { class: 'badge shadow', title }, `shadow: ${shadow.effect}`);
}

/**
 * Draws the decisions view into `root`; answers a function that stops its polling.
 * Example: `const stop = decisionsView(byId('view')); ... stop();`
 * @param {HTMLElement} root
 * @returns {() => void}
 */
export function decisionsView(root) {
  const agent = h('input', { id: 'filter-agent', type: 'search', autocomplete: 'off' });
  const effect = h(
    'select',
    { id: 'filter-effect' },
    h('option', { value: '' }, 'any'),
    ['allow', 'deny', 'review'].map((e) => h('option', { value: e }, e)),
  );
  const reason = h(
    'select',
    { id: 'filter-reason' },
    h('option', { value: '' }, 'any'),
    REASONS.map((r) => h('option', { value: r }, r)),
  );
  const diverged = h('input', { id: 'filter-shadow', type: 'checkbox' });
  const live = h('input', { id: 'live', type: 'checkbox', checked: true });
  const updated = h('p', { class: 'muted', id: 'decisions-updated' });
  const body = h('div');
  /** @type {import('../list.js').Pager<Decision> | undefined} */
  let list;
  /** @type {Map<string, string>} */
  let names = new Map();
  /** @type {Map<string, import('../api.js').Policy>} */
  let policies = new Map();

  /** Draws the current list (the one of the newest filter). */
  const render = () => {
    const shown = list;
    if (!shown) return;
    const rows = shown.items.map((d) =>
      h(
        'tr',
        { dataset: { id: d.id } },
        ...decisionLeadCells(d),
        h('td', { class: 'amount' }, amountText(d, policies)),
        h('td', {}, h('span', { class: `effect ${d.effect}` }, d.effect), shadowBadge(d)),
        h('td', {}, d.reason),
        h('td', {}, policyRef(d.policy_id, names)),
        h('td', {}, d.status),
        h('td', {}, detailsButton(d.id)),
      ),
    );
    body.replaceChildren(
      shown.items.length
        ? table(
            'Decisions, newest first',
            ['Time (UTC)', 'Agent', 'Action', 'Resource', 'Amount', 'Effect', 'Reason', 'Policy', 'Status', ''],
            rows,
          )
        : h('p', {}, 'No decisions match.'),
      moreButton(shown, render),
    );
  };

  const load = async () => {
    const q = new URLSearchParams();
    if (agent.value.trim()) q.set('agent_id', agent.value.trim());
    if (effect.value) q.set('effect', effect.value);
    if (reason.value) q.set('reason', reason.value);
    if (diverged.checked) q.set('shadow_diverged', 'true');
    /** @type {import('../list.js').Pager<Decision>} */
    const mine = pager(`/v1/decisions${q.size ? `?${q}` : ''}`, 50, (d) => d.id);
    list = mine;
    try {
      [names, policies] = await Promise.all([policyNames(), policyIndex(), mine.first()]);
      // A newer filter was chosen meanwhile: its own load renders.
      if (list !== mine) return;
      updated.textContent = updatedNow();
      render();
    } catch (e) {
      if (list === mine) body.replaceChildren(failure(describe(e)));
    }
  };

  const form = h(
    'form',
    { class: 'filters', onsubmit: (e) => (e.preventDefault(), load()) },
    h('label', { for: 'filter-agent' }, 'Agent'),
    agent,
    h('label', { for: 'filter-effect' }, 'Effect'),
    effect,
    h('label', { for: 'filter-reason' }, 'Reason'),
    reason,
    h('label', { class: 'inline', for: 'filter-shadow' }, diverged, ' Shadow diverged'),
    h('button', { type: 'submit' }, 'Filter'),
    h('label', { class: 'inline' }, live, ' Live'),
  );
  effect.addEventListener('change', load);
  diverged.addEventListener('change', load);
  reason.addEventListener('change', load);

  const timer = setInterval(async () => {
    if (!live.checked || document.hidden || !list) return;
    const current = list;
    try {
      [names, policies] = await Promise.all([policyNames(), policyIndex()]);
      if ((await current.refresh()) && list === current) render();
      updated.textContent = updatedNow();
    } catch {
      /* the next tick tries again; a refused key signs out in api() */
    }
  }, POLL_MS);

  root.replaceChildren(h('h2', {}, 'Decisions'), form, updated, body);
  load();
  return () => clearInterval(timer);
}
