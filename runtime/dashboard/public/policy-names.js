// @ts-check
// Policies shown by name, with their id in the title (on hover), wherever a policy
// appears. The names come from GET /v1/policies, kept for a short while; a key
// without policies:read, or a deleted policy, shows the id.
import { api } from './api.js';
import { h } from './dom.js';

const FRESH_MS = 30_000;

/** @type {{ at: number, names: Map<string, string> } | null} */
let cache = null;
/** @type {Promise<Map<string, string>> | null} */
let loading = null;

/**
 * The environment's policy names by id (loaded at most every 30 s).
 * Example: `const names = await policyNames(); names.get('pol_refunds')` -> `'refunds-reviewed'`
 * @returns {Promise<Map<string, string>>}
 */
export function policyNames() {
  if (cache && Date.now() - cache.at < FRESH_MS) return Promise.resolve(cache.names);
  loading ??= (async () => {
    /** @type {Map<string, string>} */
    const names = new Map();
    try {
      let after = '';
      for (;;) {
        const page = /** @type {import('./api.js').Page<import('./api.js').Policy>} */ (await api('GET', `/v1/policies?limit=100${after}`));
        for (const p of page.data) names.set(p.id, p.name);
        const last = page.data[page.data.length - 1];
        if (!page.has_more || !last) break;
        after = `&starting_after=${encodeURIComponent(last.id)}`;
      }
    } catch {
      // No policies:read (or a failure): ids are shown instead of names.
    }
    cache = { at: Date.now(), names };
    return names;
  })().finally(() => {
    loading = null;
  });
  return loading;
}

/**
 * Forgets the names (on sign-out, and after a policy is changed).
 * Example: `forgetPolicyNames()`
 */
export function forgetPolicyNames() {
  cache = null;
}

/**
 * A policy as shown: its name, with its id in the title; the id when the name is unknown.
 * Example: `h('td', {}, policyRef(d.policy_id, names))`
 * @param {string | null | undefined} id
 * @param {Map<string, string>} names
 * @returns {HTMLSpanElement | string}
 */
export function policyRef(id, names) {
  if (!id) return '—';
  return h('span', { class: 'long policy', title: id, dataset: { policyId: id } }, names.get(id) ?? id);
}

/**
 * Several policies, by name, separated by commas.
 * @param {string[]} ids
 * @param {Map<string, string>} names
 * @returns {HTMLSpanElement | string}
 */
export function policyRefs(ids, names) {
  if (!ids.length) return '—';
  return h('span', { class: 'policies' }, ids.flatMap((id, i) => (i ? [', ', policyRef(id, names)] : [policyRef(id, names)])));
}
