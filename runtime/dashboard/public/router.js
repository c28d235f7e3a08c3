// @ts-check
// Routing: the location hash names the view (#overview when none or unknown); one
// view at a time, the previous one stopped first.
import { byId, say } from './dom.js';
import { agentsView } from './views/agents.js';
import { budgetsView } from './views/budgets.js';
import { decisionsView } from './views/decisions.js';
import { overviewView } from './views/overview.js';
import { policiesView } from './views/policies.js';
import { reviewsView } from './views/reviews.js';
import { sessionsView } from './views/sessions.js';
import { webhooksView } from './views/webhooks.js';

/**
 * Draws a view into its root; answers a function that stops it. `rest` is what
 * follows the view's name in the hash (`#reviews/dec_1/approve` -> ['dec_1', 'approve']).
 * @typedef {(root: HTMLElement, rest: string[]) => () => void} View
 */

/** @type {Record<string, View>} */
const VIEWS = {
  overview: overviewView,
  reviews: reviewsView,
  decisions: decisionsView,
  sessions: sessionsView,
  policies: policiesView,
  agents: agentsView,
  budgets: budgetsView,
  webhooks: webhooksView,
};

let stopCurrent = () => {};

/**
 * Stops the view on show (its polling, if any); its content stays on the page.
 * Example: `stopView(); byId('view').replaceChildren();` on sign-out.
 */
export function stopView() {
  stopCurrent();
  stopCurrent = () => {};
}

/**
 * Shows the view the location hash names, in place of the one on show, and marks
 * its link as the current page. Example: `window.addEventListener('hashchange', () => route())`
 */
export function route() {
  stopView();
  const [hash = '', ...rest] = location.hash
    .slice(1)
    .split('/')
    .map((part) => decodeURIComponent(part));
  const name = hash in VIEWS ? hash : 'overview';
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  say('');
  stopCurrent = VIEWS[name](byId('view'), rest);
  document.title = `${name[0].toUpperCase()}${name.slice(1)} · agent-authz`;
}
