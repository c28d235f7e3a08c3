/**
 * Pairs of rows that might both apply to one request, found through the decision
 * table's own index rather than by comparing every pair: a row whose agents and
 * actions are all exact looks itself up in the trie (which returns every row that
 * can match those agent/action pairs); rows with globs or wildcards ("broad") are
 * compared with each other, grouped by action namespace.
 */
import { actionPatternParts } from '../patterns/action.js';
import { lookupCandidates } from '../table/action-trie.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';

function isNarrow(row: PolicyRow): boolean {
  return row.agents !== null && row.agents.every((g) => g.exact !== undefined) && row.policy.actions.every((a) => !a.includes('*'));
}

/** Calls `visit(a, b)` once per unordered pair that shares some agent and action, with a ranked before b. */
export function forEachOverlappingPair(table: DecisionTable, visit: (a: PolicyRow, b: PolicyRow) => void): void {
  const seen = new Set<number>();
  const n = table.rows.length;
  const emit = (x: PolicyRow, y: PolicyRow) => {
    if (x === y) return;
    const [a, b] = x.index < y.index ? [x, y] : [y, x];
    const key = a.index * n + b.index;
    if (seen.has(key)) return;
    seen.add(key);
    visit(a, b);
  };
  const broad: PolicyRow[] = [];
  for (const row of table.rows) {
    if (!isNarrow(row)) {
      broad.push(row);
      continue;
    }
    for (const agent of row.agents!) {
      for (const action of row.policy.actions) {
        for (const other of lookupCandidates(table.trie, agent.exact!, action)) emit(row, other);
      }
    }
  }
  // Broad rows: group by namespace; a wildcard-namespace row meets every broad row.
  const byNs = new Map<string, PolicyRow[]>();
  const anyNs: PolicyRow[] = [];
  for (const row of broad) {
    const namespaces = new Set(row.policy.actions.map((a) => actionPatternParts(a)[0]));
    if (namespaces.has('*')) anyNs.push(row);
    else for (const ns of namespaces) (byNs.get(ns) ?? byNs.set(ns, []).get(ns)!).push(row);
  }
  for (const group of byNs.values()) {
    for (let i = 0; i < group.length; i++) for (let j = i + 1; j < group.length; j++) emit(group[i]!, group[j]!);
  }
  for (let i = 0; i < anyNs.length; i++) {
    for (let j = i + 1; j < anyNs.length; j++) emit(anyNs[i]!, anyNs[j]!);
    for (const row of broad) emit(anyNs[i]!, row);
  }
}
