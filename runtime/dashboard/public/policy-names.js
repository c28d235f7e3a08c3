// @ts-check
// Policies shown by name, with their id in the title (on hover), wherever a policy
// appears. The policies come from GET /v1/policies (every page), kept for a short
// while; a key without policies:read, or a deleted policy, shows the id. The
// policies themselves serve the Policies view and the units of amounts (units.js).
import { api } from './api.js';
import { h, words } from './dom.js';

/** @typedef {import('./api.js').Policy} Policy */

const FRESH_MS = 30_000;

/** @typedef {{ at: number, policies: Map<string, Policy>, names: Map<string, string>, error: unknown }} Loaded */
/** @type {Loaded | null} */
let cache = null;
/** @type {Promise<Loaded> | null} */
let loading = null;

/**
 * Every policy of the environment, read page by page (loaded at most every 30 s).
 * @returns {Promise<Loaded>}
 */
function load() {
  if (cache && Date.now() - cache.at < FRESH_MS) return Promise.resolve(cache);
  loading ??= (async () => {
    /** @type {Map<string, Policy>} */
    const policies = new Map();
    /** @type {unknown} */
    let error = null;
    try {
      let after = '';
      for (;;) {
        const page = /** @type {import('./api.js').Page<Policy>} */ (
          await api('GET', `/v1/policies?limit=100${after}`)
        );
        for (const p of page.data) policies.set(p.id, p);
        const last = page.data[page.data.length - 1];
        if (!page.has_more || !last) break;
        after = `&starting_after=${encodeURIComponent(last.id)}`;
      }
    } catch (e) {
      // No policies:read (or a failure): ids are shown instead of names.
      error = e;
    }
    /** @type {Loaded} */
    const loaded = {
      at: Date.now(),
      policies,
      names: new Map([...policies.values()].map((p) => [p.id, p.name])),
      error,
    };
    cache = loaded;
    return loaded;
  })().finally(() => {
    loading = null;
  });
  return loading;
}

/**
 * The environment's policy names by id (loaded at most every 30 s).
 * Example: `const names = await policyNames(); names.get('pol_refunds')` -> `'refunds-reviewed'`
 * @returns {Promise<Map<string, string>>}
 */
export async function policyNames() {
  return (await load()).names;
}

/**
 * The environment's policies by id, as GET /v1/policies answers them (empty when
 * the key may not read them). Example: `(await policyIndex()).get('pol_refunds')?.budget?.unit`
 * @returns {Promise<Map<string, Policy>>}
 */
export async function policyIndex() {
  return (await load()).policies;
}

/**
 * Every policy, or the error that kept them from being read (the Policies view
 * shows it). Example: `const { policies, error } = await allPolicies();`
 * @returns {Promise<{ policies: Policy[], error: unknown }>}
 */
export async function allPolicies() {
  const c = await load();
  return { policies: [...c.policies.values()], error: c.error };
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
  return h('span', { class: 'policy', title: id, dataset: { policyId: id } }, words(names.get(id) ?? id));
}

/**
 * Several policies, by name, separated by commas; each comma stays on the line of
 * the name before it (a line never starts with one).
 * @param {string[]} ids
 * @param {Map<string, string>} names
 * @returns {HTMLSpanElement | string}
 */
export function policyRefs(ids, names) {
  if (!ids.length) return '—';
  const last = ids.length - 1;
  return h(
    'span',
    { class: 'policies' },
    ids.flatMap((id, i) => [
      h('span', { class: 'nowrap' }, policyRef(id, names), i < last ? ',' : ''),
      i < last ? ' ' : '',
    ]),
  );
}
