/**
 * Pairs of rows that might both apply to one request, found through indexes rather
 * than by comparing every pair:
 * - a row whose agents and actions are all exact ("narrow") looks each agent/action
 *   pair up in the decision table, which returns every row that can match it;
 * - rows with agent globs or action wildcards ("broad") meet each other through an
 *   index by action namespace and agent-pattern literal prefix: two agent patterns
 *   can only overlap when one literal prefix is a prefix of the other.
 * Narrow/broad pairs are found from the narrow side. The visitor checks real overlap.
 */
import { actionPatternParts } from '../patterns/action.js';
import { lookupCandidates } from '../table/action-trie.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';

function isNarrow(row: PolicyRow): boolean {
  return (
    row.agents !== null &&
    row.agents.every((g) => g.exact !== undefined) &&
    row.policy.actions.every((a) => !a.includes('*'))
  );
}

/** Literal prefixes of a row's agent patterns ('' for every agent). */
function agentKeys(row: PolicyRow): string[] {
  return row.agents === null ? [''] : row.agents.map((g) => g.exact ?? g.prefix);
}

/** Rows keyed by agent-pattern literal prefix, probing ancestors and descendants of a key. */
class PrefixGroup {
  private readonly byKey = new Map<string, PolicyRow[]>();
  private sortedKeys: string[] = [];
  private lengths: number[] = [];

  add(key: string, row: PolicyRow): void {
    const list = this.byKey.get(key);
    if (list) {
      if (list[list.length - 1] !== row) list.push(row);
    } else this.byKey.set(key, [row]);
  }

  seal(): void {
    this.sortedKeys = [...this.byKey.keys()].sort();
    this.lengths = [...new Set(this.sortedKeys.map((k) => k.length))].sort((a, b) => a - b);
  }

  /**
   * Rows whose key is a prefix of `key`, or starts with it, ranked after `after`
   * (each list is in rank order: the rows ranked before are skipped by a search,
   * not one by one).
   */
  compatible(key: string, after: number, visit: (row: PolicyRow) => void): void {
    for (const len of this.lengths) {
      if (len >= key.length) break;
      const list = this.byKey.get(key.slice(0, len));
      if (list !== undefined) for (let i = firstAfter(list, after); i < list.length; i++) visit(list[i]!);
    }
    let lo = 0;
    let hi = this.sortedKeys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.sortedKeys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.sortedKeys.length && this.sortedKeys[i]!.startsWith(key); i++) {
      const list = this.byKey.get(this.sortedKeys[i]!)!;
      for (let j = firstAfter(list, after); j < list.length; j++) visit(list[j]!);
    }
  }
}

/** First position in a rank-ordered list whose row's index is above `index`. */
function firstAfter(list: readonly PolicyRow[], index: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.index <= index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Calls `visit(a, b)` once per unordered pair that may share an agent and an action, with a ranked before b. */
export function forEachOverlappingPair(table: DecisionTable, visit: (a: PolicyRow, b: PolicyRow) => void): void {
  const broad: PolicyRow[] = [];
  const narrow = new Set<PolicyRow>();
  for (const row of table.rows) isNarrow(row) ? narrow.add(row) : broad.push(row);

  for (const row of narrow) {
    // One agent and one action: one lookup, whose rows are already unique.
    const seen = row.agents!.length * row.policy.actions.length > 1 ? new Set<PolicyRow>() : null;
    for (const agent of row.agents!) {
      for (const action of row.policy.actions) {
        for (const other of lookupCandidates(table.trie, agent.exact!, action)) {
          if (other === row || seen?.has(other)) continue;
          seen?.add(other);
          // A narrow/narrow pair is met from both sides: keep the one from the lower row.
          if (narrow.has(other) && other.index < row.index) continue;
          if (row.index < other.index) visit(row, other);
          else visit(other, row);
        }
      }
    }
  }

  const groups = new Map<string, PrefixGroup>();
  const group = (ns: string) => groups.get(ns) ?? groups.set(ns, new PrefixGroup()).get(ns)!;
  for (const row of broad) {
    const namespaces = new Set(row.policy.actions.map((a) => actionPatternParts(a)[0]));
    for (const ns of namespaces) for (const key of agentKeys(row)) group(ns).add(key, row);
  }
  for (const g of groups.values()) g.seal();
  const allGroups = [...groups.values()];
  // Rows met by the current broad row, marked with its turn (a Set per row cost more than the visits).
  const place = new Map<PolicyRow, number>();
  table.rows.forEach((r, i) => place.set(r, i));
  const metOn = new Int32Array(table.rows.length);
  let turn = 0;
  let current: PolicyRow = broad[0]!;
  const meet = (other: PolicyRow) => {
    if (other.index <= current.index) return;
    const at = place.get(other)!;
    if (metOn[at] === turn) return;
    metOn[at] = turn;
    visit(current, other);
  };
  for (const row of broad) {
    current = row;
    turn++;
    const namespaces = new Set(row.policy.actions.map((a) => actionPatternParts(a)[0]));
    const probe = namespaces.has('*') ? allGroups : [...namespaces, '*'].flatMap((ns) => groups.get(ns) ?? []);
    const keys = agentKeys(row);
    for (const g of probe) for (const key of keys) g.compatible(key, row.index, meet);
  }
}
