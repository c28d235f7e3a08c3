// @ts-check
// agent-authz dashboard, the entry module: the session, then the router. Plain ES
// modules over the public /v1 API, served as they are. The API key is kept in
// sessionStorage (this tab only) and sent as a bearer token; it never appears in a
// URL. Every value from the API reaches the page as text nodes (no innerHTML), and
// the page's CSP allows scripts from this origin only.
import { ApiError, api, describe, useSession } from './api.js';
import { byId } from './dom.js';
import { forgetPolicyNames } from './policy-names.js';
import { refreshReviewCount } from './review-count.js';
import { route, stopView } from './router.js';

const KEY_STORE = 'agent-authz.api-key';
const COUNT_MS = 10_000;

const storedKey = () => sessionStorage.getItem(KEY_STORE) ?? '';
const signedIn = () => Boolean(storedKey());

/** Shows the sign-in form or the navigation and session bar, as the key says. */
function showSession() {
  const key = storedKey();
  const on = Boolean(key);
  byId('sign-in').hidden = on;
  byId('nav').hidden = !on;
  byId('session').hidden = !on;
  byId('environment').textContent = key.startsWith('svc_live_') ? 'live environment' : 'test environment';
  byId('environment').className = key.startsWith('svc_live_') ? 'badge live' : 'badge';
}

/**
 * Forgets the key, clears the view and shows the sign-in form with a message.
 * @param {string} [message]
 */
function signOut(message) {
  sessionStorage.removeItem(KEY_STORE);
  forgetPolicyNames();
  byId('review-count').hidden = true;
  stopView();
  byId('view').replaceChildren();
  showSession();
  byId('sign-in-error').textContent = message ?? '';
  byId('api-key').focus();
}

/** The view the hash names when signed in, else the sign-in form. */
function show() {
  if (!signedIn()) {
    stopView();
    showSession();
    byId('api-key').focus();
    return;
  }
  route();
  refreshReviewCount();
}

/**
 * Whether the signed-in key may read the review queue.
 * @returns {Promise<boolean>}
 */
async function readsReviews() {
  try {
    await api('GET', '/v1/reviews?limit=1');
    return true;
  } catch {
    return false;
  }
}

useSession({ key: storedKey, refused: signOut });

byId('sign-in').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = byId('api-key', HTMLInputElement);
  const key = input.value.trim();
  byId('sign-in-error').textContent = '';
  if (!/^svc_(test|live)_sk_[A-Za-z0-9]{32,}$/.test(key)) {
    byId('sign-in-error').textContent = 'That is not an API key: it starts with svc_test_sk_ or svc_live_sk_.';
    return;
  }
  sessionStorage.setItem(KEY_STORE, key);
  let readsDecisions = true;
  try {
    await api('GET', '/v1/decisions?limit=1');
  } catch (e) {
    // 403: a key without decisions:read is still a key; only 401 refuses it.
    if (!(e instanceof ApiError && e.status === 403)) {
      sessionStorage.removeItem(KEY_STORE);
      showSession();
      byId('sign-in-error').textContent = `Sign-in failed: ${describe(e)}`;
      return;
    }
    readsDecisions = false;
  }
  // A reviewer key (reviews:read, no decisions:read) opens on its work, not on an overview it may not read.
  if (!readsDecisions && !location.hash && (await readsReviews())) history.replaceState(null, '', '#reviews');
  input.value = '';
  forgetPolicyNames();
  showSession();
  show();
});

byId('sign-out').addEventListener('click', () => signOut('Signed out.'));

window.addEventListener('hashchange', show);
// The open reviews' count beside "Reviews", kept current while the tab is visible.
setInterval(() => {
  if (signedIn() && !document.hidden) refreshReviewCount();
}, COUNT_MS);
showSession();
show();
