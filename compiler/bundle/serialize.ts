/** Decision table <-> its JSON form in a bundle (both directions linear in size). */
import type { CompiledGlob } from '../patterns/glob.js';
import type { AffixIndex, AgentIndex, GlobEntry } from '../table/agent-index.js';
import type { ActionTrie, VerbNode } from '../table/action-trie.js';
import type { PolicyRow } from '../table/rows.js';
import type { SerializedGlobRef, SerializedLeaf, SerializedTable, SerializedVerbNode } from './format.js';

export function serializeTable(rows: readonly PolicyRow[], trie: ActionTrie, positionOf: (row: PolicyRow) => number): SerializedTable {
  const ref = (e: GlobEntry): SerializedGlobRef => [e.row.index, e.row.agents!.indexOf(e.glob)];
  const affix = (a: AffixIndex) => Object.fromEntries([...a.byAffix].map(([key, entries]) => [key, entries.map(ref)]));
  const leaf = (index: AgentIndex): SerializedLeaf => ({
    exact: Object.fromEntries([...index.exact].map(([agent, list]) => [agent, list.map((r) => r.index)])),
    prefixed: affix(index.prefixed),
    suffixed: affix(index.suffixed),
    globs: index.globs.map(ref),
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
    // Shadow policies are indexed apart, at load: one in the enforcement index would decide.
    if (r.policy.state === 'shadow') throw new TableFormatError(`table indexes row ${i}, a shadow policy, for enforcement`);
    return r;
  };
  const entry = ([r, g]: SerializedGlobRef, check: (glob: CompiledGlob) => boolean): GlobEntry => {
    const target = row(r);
    const glob = target.agents?.[g];
    if (!glob || !check(glob)) throw new TableFormatError(`table refers to agent pattern ${g} of row ${r}, which does not fit`);
    return { row: target, glob };
  };
  const affix = (record: Record<string, SerializedGlobRef[]>, prefix: boolean): AffixIndex => {
    const byAffix = new Map(
      Object.entries(record).map(([key, refs]) => [key, refs.map((x) => entry(x, (glob) => (prefix ? glob.prefix === key : glob.prefix === '' && glob.suffix === key)))]),
    );
    return { byAffix, lengths: [...new Set([...byAffix.keys()].map((k) => k.length))].sort((a, b) => a - b) };
  };
  const leaf = (l: SerializedLeaf): AgentIndex => ({
    exact: new Map(Object.entries(l.exact).map(([agent, list]) => [agent, list.map(row)])),
    prefixed: affix(l.prefixed, true),
    suffixed: affix(l.suffixed, false),
    globs: l.globs.map((x) => entry(x, (glob) => glob.exact === undefined)),
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
