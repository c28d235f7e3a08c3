// @ts-check
// The number of open reviews beside "Reviews" in the navigation.
import { api } from './api.js';
import { byId } from './dom.js';

/**
 * Reads the open reviews (up to 100: more shows "100+") and shows their number;
 * hidden when there are none or the key may not read reviews.
 * Example: `await refreshReviewCount()` after a verdict.
 * @returns {Promise<void>}
 */
export async function refreshReviewCount() {
  const badge = byId('review-count');
  try {
    const page = /** @type {import('./api.js').Page<unknown>} */ (
      await api('GET', '/v1/reviews?status=open&limit=100')
    );
    const n = `${page.data.length}${page.has_more ? '+' : ''}`;
    badge.textContent = n;
    badge.title = `${n} open review${n === '1' ? '' : 's'}`;
    badge.hidden = page.data.length === 0;
  } catch {
    badge.hidden = true;
  }
}
