/**
 * Patching a decision table for a few changed policies instead of building it
 * again: the rows of the removed policies leave, the new ones are ranked in
 * between their neighbours, and only the index leaves they touch are rebuilt (the
 * paths to them copied, everything else shared). The old table is never changed,
 * so decisions running on it are unaffected; the patched table decides exactly as
 * a full build of the same policies (property-tested: test/compiler/table/patch-property.test.ts).
 *
 * Ranks: a row's `index` orders rows (lower decides first) but need not be its
 * position; a row ranked between two others gets the midpoint of their indexes.
 * When no number is left between them, patching answers null and the caller
 * builds the table whole (which numbers the rows 0, 1, 2... again).
 */
import type { ConditionAst } from '../condition/index.js';
import { actionPatternParts } from '../patterns/action.js';
import type { Policy } from '../policy/types.js';
import type { ReadPolicy } from '../policy/read.js';
import { emptyActionTrie, type ActionTrie, type VerbNode } from './action-trie.js';
import { addToAgentIndex, emptyAgentIndex, type AgentIndex } from './agent-index.js';
import { isEnforced, type DecisionTable, type ShadowRows } from './build.js';
import { OverlayMap } from './overlay-map.js';
import { buildRow, comparePolicies, shadowRow, type PolicyRow } from './rows.js';

/** Every row of one leaf (each once), in rank order. */
function leafRows(leaf: AgentIndex | null | undefined): PolicyRow[] {
  if (!leaf) return [];
  const rows = new Set<PolicyRow>();
  for (const list of leaf.exact.values()) for (const row of list) rows.add(row);
  for (const affix of [leaf.prefixed, leaf.suffixed])
    for (const list of affix.byAffix.values()) for (const e of list) rows.add(e.row);
  for (const e of leaf.globs) rows.add(e.row);
  for (const row of leaf.any) rows.add(row);
  return [...rows].sort((a, b) => a.index - b.index);
}

/**
 * A copy of `trie` where every leaf that `removed` or `added` rows name is built
 * again from its rows (minus `removed`, plus `added`); the rest is shared. Empty
 * leaves and nodes are dropped, as a full build would not have them.
 */
export function patchTrie(trie: ActionTrie, removed: readonly PolicyRow[], added: readonly PolicyRow[]): ActionTrie {
  if (removed.length === 0 && added.length === 0) return trie;
  const gone = new Set(removed);
  const next: ActionTrie = { exact: new Map(trie.exact), wildcard: trie.wildcard };
  const nodes = new Map<string, VerbNode>();
  const nodeFor = (ns: string): VerbNode => {
    let node = nodes.get(ns);
    if (node === undefined) {
      const old = ns === '*' ? trie.wildcard : trie.exact.get(ns);
      node = { exact: new Map(old?.exact ?? []), wildcard: old?.wildcard ?? null };
      nodes.set(ns, node);
    }
    return node;
  };
  // The leaves to rebuild, each with the rows to add to it.
  const leaves = new Map<string, { ns: string; verb: string; add: PolicyRow[] }>();
  for (const [rows, adding] of [
    [removed, false],
    [added, true],
  ] as const) {
    for (const row of rows) {
      for (const pattern of row.policy.actions) {
        const [ns, verb] = actionPatternParts(pattern);
        const key = `${ns}\u0000${verb}`;
        let leaf = leaves.get(key);
        if (!leaf) leaves.set(key, (leaf = { ns, verb, add: [] }));
        if (adding && leaf.add[leaf.add.length - 1] !== row) leaf.add.push(row);
      }
    }
  }
  for (const { ns, verb, add } of leaves.values()) {
    const node = nodeFor(ns);
    const old = verb === '*' ? node.wildcard : node.exact.get(verb);
    const rows = leafRows(old).filter((r) => !gone.has(r));
    for (const row of add) rows.push(row);
    rows.sort((a, b) => a.index - b.index);
    let leaf: AgentIndex | null = null;
    if (rows.length > 0) {
      leaf = emptyAgentIndex();
      for (const row of rows) addToAgentIndex(leaf, row);
    }
    if (verb === '*') node.wildcard = leaf;
    else if (leaf) node.exact.set(verb, leaf);
    else node.exact.delete(verb);
  }
  for (const [ns, node] of nodes) {
    const keep = node.exact.size > 0 || node.wildcard !== null ? node : null;
    if (ns === '*') next.wildcard = keep;
    else if (keep) next.exact.set(ns, keep);
    else next.exact.delete(ns);
  }
  return next;
}

/** Position of the row with rank `index` in rank-ordered `rows` (or where it would be). */
function indexPosition(rows: readonly PolicyRow[], index: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid]!.index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First position in `rows` whose policy ranks after `policy`. */
function rankPosition(rows: readonly PolicyRow[], policy: Policy): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (comparePolicies(rows[mid]!.policy, policy) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The table with the policies `removeIds` taken out and `add` put in (a replaced
 * policy is both), decided exactly as a full build of the resulting set would.
 * Null when it cannot be patched: an id to remove that the table lacks, an added
 * policy whose id or name another kept policy has (the full compile reports it),
 * or no rank left between two rows. Never changes `table`.
 *
 * @param table - the current table.
 * @param removeIds - ids of the policies that leave (replaced ones included).
 * @param add - the policies that come in, read (readPolicyValue(...).items).
 * @returns the patched table, or null (build it whole instead).
 *
 * @example
 * ```ts
 * import { compileItems, evaluate, patchTable, readPolicyValue } from 'agent-authz/compiler';
 *
 * const a = readPolicyValue({ id: 'pol_a', name: 'reads', effect: 'allow', actions: ['orders.read'] }).items;
 * const { table } = compileItems(a);
 * const b = readPolicyValue({ id: 'pol_a', name: 'reads', effect: 'deny', actions: ['orders.read'] }).items;
 * const patched = patchTable(table, ['pol_a'], b);
 * console.log(evaluate(table, { agent_id: 'bot', action: 'orders.read' }).effect, evaluate(patched, { agent_id: 'bot', action: 'orders.read' }).effect); // => allow deny
 * ```
 */
export function patchTable(
  table: DecisionTable,
  removeIds: readonly string[],
  add: readonly Pick<ReadPolicy, 'policy' | 'condition'>[],
): DecisionTable | null {
  const removed: PolicyRow[] = [];
  for (const id of removeIds) {
    const row = table.byId.get(id);
    if (row === undefined) return null;
    removed.push(row);
  }
  const goneIds = new Set(removeIds);
  // Copied as pointers and found by rank: the 100,000 rows themselves are not visited.
  const rows = table.rows.slice();
  for (const row of removed) {
    const at = indexPosition(rows, row.index);
    if (rows[at] !== row) return null;
    rows.splice(at, 1);
  }
  // Ids and names stay unique (else the full compile has the diagnostics to give).
  const names = new Set<string>();
  const ids = new Set<string>();
  for (const item of add) {
    if (
      (table.byId.has(item.policy.id) && !goneIds.has(item.policy.id)) ||
      ids.has(item.policy.id) ||
      names.has(item.policy.name)
    )
      return null;
    names.add(item.policy.name);
    ids.add(item.policy.id);
  }
  // A name a removed policy had is free (the table had unique names); any other is looked for.
  for (const row of removed) names.delete(row.policy.name);
  if (names.size > 0) for (const row of rows) if (names.has(row.policy.name)) return null;

  const added: PolicyRow[] = [];
  for (const item of [...add].sort((x, y) => comparePolicies(x.policy, y.policy))) {
    const at = rankPosition(rows, item.policy);
    const before = rows[at - 1]?.index;
    const after = rows[at]?.index;
    const index =
      before === undefined
        ? after === undefined
          ? 0
          : after - 1
        : after === undefined
          ? before + 1
          : before + (after - before) / 2;
    if ((before !== undefined && !(index > before)) || (after !== undefined && !(index < after))) return null;
    const row = buildRow(index, item.policy, (item.condition ?? null) as ConditionAst | null);
    rows.splice(at, 0, row);
    added.push(row);
  }

  const byId = OverlayMap.with(
    table.byId,
    removed.map((r) => r.policy.id),
    added.map((r) => [r.policy.id, r] as const),
  );
  const trie = patchTrie(table.trie, removed.filter(isEnforced), added.filter(isEnforced));
  return { rows, trie, byId, shadow: patchShadow(table.shadow, removed, added) };
}

/** The shadow part with the changed shadow policies' rows taken out and put in. */
function patchShadow(
  shadow: ShadowRows | null,
  removed: readonly PolicyRow[],
  added: readonly PolicyRow[],
): ShadowRows | null {
  const goneIds = new Set(removed.filter((r) => !isEnforced(r)).map((r) => r.policy.id));
  const incoming = added.filter((r) => !isEnforced(r)).map(shadowRow);
  if (goneIds.size === 0 && incoming.length === 0) return shadow;
  const outgoing = shadow ? shadow.rows.filter((r) => goneIds.has(r.policy.id)) : [];
  const rows = (shadow ? shadow.rows.filter((r) => !goneIds.has(r.policy.id)) : [])
    .concat(incoming)
    .sort((a, b) => a.index - b.index);
  if (rows.length === 0) return null;
  return { rows, trie: patchTrie(shadow?.trie ?? emptyActionTrie(), outgoing, incoming) };
}
