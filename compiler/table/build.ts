/**
 * Building a decision table from normalised policies (and their parsed
 * conditions): rows ranked once, then indexed by action and agent.
 */
import type { ConditionAst } from '../condition/index.js';
import type { Policy } from '../policy/types.js';
import { emptyActionTrie, insertRow, type ActionTrie } from './action-trie.js';
import { buildRow, comparePolicies, type PolicyRow } from './rows.js';

export interface DecisionTable {
  /** Every policy's row, in rank order (row.index === position). */
  readonly rows: readonly PolicyRow[];
  readonly trie: ActionTrie;
  readonly byId: ReadonlyMap<string, PolicyRow>;
}

/**
 * `conditions` gives the parsed condition of each policy id that has one; the
 * caller (compile or bundle load) has already parsed and checked them.
 */
export function buildTable(policies: readonly Policy[], conditions: ReadonlyMap<string, ConditionAst>): DecisionTable {
  const ranked = [...policies].sort(comparePolicies);
  const rows = ranked.map((policy, index) => buildRow(index, policy, conditions.get(policy.id) ?? null));
  return tableFromRows(rows);
}

export function tableFromRows(rows: PolicyRow[], trie?: ActionTrie): DecisionTable {
  const byId = new Map<string, PolicyRow>();
  for (const row of rows) byId.set(row.policy.id, row);
  if (!trie) {
    trie = emptyActionTrie();
    for (const row of rows) insertRow(trie, row);
  }
  return { rows, trie, byId };
}
