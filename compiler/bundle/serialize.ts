/** Decision table <-> its JSON form in a bundle (both directions linear in size). */
import type { AgentIndex } from '../table/agent-index.js';
import type { ActionTrie, VerbNode } from '../table/action-trie.js';
import type { PolicyRow } from '../table/rows.js';
import type { SerializedLeaf, SerializedTable, SerializedVerbNode } from './format.js';

export function serializeTable(rows: readonly PolicyRow[], trie: ActionTrie, positionOf: (row: PolicyRow) => number): SerializedTable {
  const leaf = (index: AgentIndex): SerializedLeaf => ({
    exact: Object.fromEntries([...index.exact].map(([agent, list]) => [agent, list.map((r) => r.index)])),
    globs: index.globs.map((r) => r.index),
    any: index.any.map((r) => r.index),
  });
  const verbNode = (node: VerbNode): SerializedVerbNode => ({
    exact: Object.fromEntries([...node.exact].map(([verb, l]) => [verb, leaf(l)])),
    wildcard: node.wildcard ? leaf(node.wildcard) : null,
  });
  return {
    rows: rows.map(positionOf),
    actions: {
      exact: Object.fromEntries([...trie.exact].map(([ns, node]) => [ns, verbNode(node)])),
      wildcard: trie.wildcard ? verbNode(trie.wildcard) : null,
    },
  };
}

export class TableFormatError extends Error {}

export function deserializeTrie(table: SerializedTable, rows: readonly PolicyRow[]): ActionTrie {
  const row = (i: number): PolicyRow => {
    const r = rows[i];
    if (r === undefined) throw new TableFormatError(`table refers to row ${i}, but there are ${rows.length}`);
    return r;
  };
  const leaf = (l: SerializedLeaf): AgentIndex => ({
    exact: new Map(Object.entries(l.exact).map(([agent, list]) => [agent, list.map(row)])),
    globs: l.globs.map(row),
    any: l.any.map(row),
  });
  const verbNode = (n: SerializedVerbNode): VerbNode => ({
    exact: new Map(Object.entries(n.exact).map(([verb, l]) => [verb, leaf(l)])),
    wildcard: n.wildcard ? leaf(n.wildcard) : null,
  });
  return {
    exact: new Map(Object.entries(table.actions.exact).map(([ns, n]) => [ns, verbNode(n)])),
    wildcard: table.actions.wildcard ? verbNode(table.actions.wildcard) : null,
  };
}
