// @ts-check
// What every view shows of a decision's session: a link to its view
// (#sessions/<id>) and labels as badges. A leaf (the decision panel, the review
// queue and the session view use it; the session view itself imports the panel).
import { h, long } from './dom.js';

/**
 * The hash of a session's view.
 * Example: `location.hash = sessionHref('run-2')`
 * @param {string} id
 * @returns {string}
 */
export const sessionHref = (id) => `#sessions/${encodeURIComponent(id)}`;

/**
 * A link to a session's view, its id as the text.
 * Example: `h('dd', {}, sessionLink(d.session_id))`
 * @param {string} id
 * @returns {HTMLAnchorElement}
 */
export const sessionLink = (id) =>
  h('a', { href: sessionHref(id), class: 'session-link', 'aria-label': `Session ${id}` }, long(id));

/**
 * Labels as badges (`private`, `untrusted`), or an em dash for none.
 * Example: `h('td', {}, labelBadges(d.metadata.session_labels))`
 * @param {string[] | undefined} labels
 * @returns {HTMLElement | string}
 */
export function labelBadges(labels) {
  if (!labels?.length) return '—';
  return h(
    'span',
    { class: 'labels' },
    labels.map((l) => h('span', { class: 'badge label', dataset: { label: l } }, l)),
  );
}
