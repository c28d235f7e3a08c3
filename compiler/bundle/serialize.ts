/** Decision table <-> its JSON form in a bundle (both directions linear in size). */
import type { CompiledGlob } from '../patterns/glob.js';
import type { AffixIndex, AgentIndex, GlobEntry } from '../table/agent-index.js';
import type { ActionTrie, VerbNode } from '../table/action-trie.js';
import type { PolicyRow } from '../table/rows.js';
import { ROWS_PER_STEP, runSteps } from '../table/build.js';
import type { SerializedGlobRef, SerializedLeaf, SerializedTable, SerializedVerbNode } from './format.js';

export function serializeTable(
  rows: readonly PolicyRow[],
  trie: ActionTrie,
  positionOf: (row: PolicyRow) => number,
): SerializedTable {
  // A row's place in `rows` (its index orders rows but, in a patched table, is not always its place).
  const place = new Map<PolicyRow, number>();
  rows.forEach((row, i) => place.set(row, i));
  const at = (row: PolicyRow): number => place.get(row)!;
  const ref = (e: GlobEntry): SerializedGlobRef => [at(e.row), e.row.agents!.indexOf(e.glob)];
  const affix = (a: AffixIndex) => Object.fromEntries([...a.byAffix].map(([key, entries]) => [key, entries.map(ref)]));
  const leaf = (index: AgentIndex): SerializedLeaf => ({
    exact: Object.fromEntries([...index.exact].map(([agent, list]) => [agent, list.map(at)])),
    prefixed: affix(index.prefixed),
    suffixed: affix(index.suffixed),
    globs: index.globs.map(ref),
    any: index.any.map(at),
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
  return runSteps(deserializeTrieSteps(table, rows));
}

/** {@link deserializeTrie} in steps of about {@link ROWS_PER_STEP} index entries (loadBundleSteps). */
export function* deserializeTrieSteps(table: SerializedTable, rows: readonly PolicyRow[]): Generator<void, ActionTrie> {
  let done = 0;
  /** True every ROWS_PER_STEP entries: the caller yields. */
  const tick = (): boolean => ++done % ROWS_PER_STEP === 0;
  const row = (i: number): PolicyRow => {
    const r = rows[i];
    if (r === undefined) throw new TableFormatError(`table refers to row ${i}, but there are ${rows.length}`);
    // Shadow policies are indexed apart, at load: one in the enforcement index would decide.
    if (r.policy.state === 'shadow')
      throw new TableFormatError(`table indexes row ${i}, a shadow policy, for enforcement`);
    return r;
  };
  const entry = ([r, g]: SerializedGlobRef, check: (glob: CompiledGlob) => boolean): GlobEntry => {
    const target = row(r);
    const glob = target.agents?.[g];
    if (!glob || !check(glob))
      throw new TableFormatError(`table refers to agent pattern ${g} of row ${r}, which does not fit`);
    return { row: target, glob };
  };
  function* affix(record: Record<string, SerializedGlobRef[]>, prefix: boolean): Generator<void, AffixIndex> {
    const byAffix = new Map<string, GlobEntry[]>();
    for (const [key, refs] of Object.entries(record)) {
      byAffix.set(
        key,
        refs.map((x) => entry(x, (glob) => (prefix ? glob.prefix === key : glob.prefix === '' && glob.suffix === key))),
      );
      if (tick()) yield;
    }
    return {
      byAffix,
      lengths: [...new Set([...byAffix.keys()].map((k) => k.length))].sort((a, b) => a - b),
      buckets: undefined,
    };
  }
  function* leaf(l: SerializedLeaf): Generator<void, AgentIndex> {
    const exact = new Map<string, PolicyRow[]>();
    for (const [agent, list] of Object.entries(l.exact)) {
      exact.set(agent, list.map(row));
      if (tick()) yield;
    }
    return {
      exact,
      prefixed: yield* affix(l.prefixed, true),
      suffixed: yield* affix(l.suffixed, false),
      globs: l.globs.map((x) => entry(x, (glob) => glob.exact === undefined)),
      any: l.any.map(row),
      anyGroups: undefined, // the same object shape as emptyAgentIndex's: one hidden class on the hot path
    };
  }
  function* verbNode(n: SerializedVerbNode): Generator<void, VerbNode> {
    const exact = new Map<string, AgentIndex>();
    for (const [verb, l] of Object.entries(n.exact)) exact.set(verb, yield* leaf(l));
    return { exact, wildcard: n.wildcard ? yield* leaf(n.wildcard) : null };
  }
  const exact = new Map<string, VerbNode>();
  for (const [ns, n] of Object.entries(table.actions.exact)) exact.set(ns, yield* verbNode(n));
  return { exact, wildcard: table.actions.wildcard ? yield* verbNode(table.actions.wildcard) : null };
}
