// @ts-check
// A paged list of the API (newest first) and its "Load older" button.
import { api, describe } from './api.js';
import { h, say } from './dom.js';

/**
 * @template T
 * @typedef {object} Pager
 * @property {T[]} items the items loaded so far, newest first
 * @property {boolean} hasMore whether older items remain
 * @property {() => Promise<void>} first loads the first page again, in place of the items
 * @property {() => Promise<void>} more appends the next page
 * @property {() => Promise<number>} refresh puts the newest items not shown yet on top; answers how many
 */

/**
 * Loads pages of a list endpoint; `idOf` names the cursor field of an item.
 * Example: `const list = pager('/v1/agents', 50, (a) => a.agent_id); await list.first();`
 * @template T
 * @param {string} path
 * @param {number} limit
 * @param {(item: T) => string} idOf
 * @returns {Pager<T>}
 */
export function pager(path, limit, idOf) {
  /** @type {T[]} */
  const items = [];
  let hasMore = false;
  const sep = path.includes('?') ? '&' : '?';
  /** @param {string} query */
  const get = async (query) => /** @type {import('./api.js').Page<T>} */ (await api('GET', `${path}${sep}${query}`));
  return {
    items,
    get hasMore() {
      return hasMore;
    },
    async first() {
      const page = await get(`limit=${limit}`);
      items.splice(0, items.length, ...page.data);
      hasMore = page.has_more;
    },
    async more() {
      const last = items[items.length - 1];
      const page = await get(`limit=${limit}${last ? `&starting_after=${encodeURIComponent(idOf(last))}` : ''}`);
      items.push(...page.data);
      hasMore = page.has_more;
    },
    async refresh() {
      const page = await get(`limit=${limit}`);
      const shown = new Set(items.map(idOf));
      /** @type {T[]} */
      const fresh = [];
      for (const item of page.data) {
        if (shown.has(idOf(item))) break;
        fresh.push(item);
      }
      items.unshift(...fresh);
      return fresh.length;
    },
  };
}

/**
 * "Load older" under a list when it has more, else nothing (an empty string).
 * Example: `body.replaceChildren(table(...), moreButton(list, render))`
 * @template T
 * @param {Pager<T>} list
 * @param {() => void} render draws the list again once the page is in
 * @returns {HTMLButtonElement | string}
 */
export function moreButton(list, render) {
  if (!list.hasMore) return '';
  return h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        try {
          await list.more();
          render();
        } catch (e) {
          say(describe(e), 'error');
        }
      },
    },
    'Load older',
  );
}

/**
 * Every item of a list endpoint in its order, page after page of 100, up to `cap`
 * items; `truncated` says the list had more. For views that sort or group the whole
 * list themselves (the review queue, the policies by priority).
 * Example: `const { items } = await readAll('/v1/reviews?status=open', (d) => d.id, 1000);`
 * @template T
 * @param {string} path
 * @param {(item: T) => string} idOf
 * @param {number} cap
 * @returns {Promise<{ items: T[], truncated: boolean }>}
 */
export async function readAll(path, idOf, cap) {
  const sep = path.includes('?') ? '&' : '?';
  /** @type {T[]} */
  const items = [];
  let after = '';
  for (;;) {
    const page = /** @type {import('./api.js').Page<T>} */ (await api('GET', `${path}${sep}limit=100${after}`));
    items.push(...page.data);
    const last = page.data[page.data.length - 1];
    if (!page.has_more || !last) return { items, truncated: false };
    if (items.length >= cap) return { items: items.slice(0, cap), truncated: true };
    after = `&starting_after=${encodeURIComponent(idOf(last))}`;
  }
}
