/**
 * The action index: a two-level trie over an action's namespace and verb, each
 * level with exact branches and one wildcard branch. A lookup visits at most four
 * leaves (ns.verb, ns.*, *.verb, *.*), so its cost does not grow with the number
 * of policies that name other actions.
 */
import { actionPatternParts } from '../patterns/action.js';
import {
  addToAgentIndex,
  collectForAgent,
  emptyAgentIndex,
  type AgentIndex,
  type CandidateFilter,
} from './agent-index.js';
import type { PolicyRow } from './rows.js';

export interface VerbNode {
  readonly exact: Map<string, AgentIndex>;
  wildcard: AgentIndex | null;
}

export interface ActionTrie {
  readonly exact: Map<string, VerbNode>;
  wildcard: VerbNode | null;
}

export function emptyActionTrie(): ActionTrie {
  return { exact: new Map(), wildcard: null };
}

function emptyVerbNode(): VerbNode {
  return { exact: new Map(), wildcard: null };
}

/** The leaf for a pattern, created on demand. */
export function leafFor(trie: ActionTrie, pattern: string): AgentIndex {
  const [ns, verb] = actionPatternParts(pattern);
  let node: VerbNode;
  if (ns === '*') node = trie.wildcard ??= emptyVerbNode();
  else {
    let found = trie.exact.get(ns);
    if (!found) trie.exact.set(ns, (found = emptyVerbNode()));
    node = found;
  }
  if (verb === '*') return (node.wildcard ??= emptyAgentIndex());
  let leaf = node.exact.get(verb);
  if (!leaf) node.exact.set(verb, (leaf = emptyAgentIndex()));
  return leaf;
}

/** Inserts a row under each of its action patterns (rows in row order). */
export function insertRow(trie: ActionTrie, row: PolicyRow): void {
  const leaves = new Set<AgentIndex>();
  for (const pattern of row.policy.actions) leaves.add(leafFor(trie, pattern));
  for (const leaf of leaves) addToAgentIndex(leaf, row);
}

/**
 * The rows whose agent filter and action pattern match, in no particular order and
 * possibly more than once (a row reached through several leaves or buckets): what
 * `decide` needs, without the cost of ordering every candidate.
 */
export function collectCandidates(
  trie: ActionTrie,
  agentId: string,
  action: string,
  filter?: CandidateFilter,
): PolicyRow[] {
  const dot = action.indexOf('.');
  const ns = action.slice(0, dot);
  const verb = action.slice(dot + 1);
  const out: PolicyRow[] = [];
  const exactNs = trie.exact.get(ns);
  if (exactNs !== undefined) collectVerb(exactNs, verb, agentId, out, filter);
  if (trie.wildcard !== null) collectVerb(trie.wildcard, verb, agentId, out, filter);
  return out;
}

/** The same rows in row order, each once. */
export function lookupCandidates(trie: ActionTrie, agentId: string, action: string): PolicyRow[] {
  return sortUnique(collectCandidates(trie, agentId, action));
}

function collectVerb(
  node: VerbNode,
  verb: string,
  agentId: string,
  out: PolicyRow[],
  filter: CandidateFilter | undefined,
): void {
  const leaf = node.exact.get(verb);
  if (leaf !== undefined) collectForAgent(leaf, agentId, out, filter);
  if (node.wildcard !== null) collectForAgent(node.wildcard, agentId, out, filter);
}

/** Sorts by row index and drops repeats. */
export function sortUnique<T extends { index: number }>(rows: T[]): T[] {
  let sorted = true;
  for (let i = 1; i < rows.length; i++) {
    if (rows[i - 1]!.index >= rows[i]!.index) {
      sorted = false;
      break;
    }
  }
  if (sorted) return rows;
  if (rows.length <= 32) {
    // Candidates come as a few sorted runs: insertion sort is near linear on them.
    for (let i = 1; i < rows.length; i++) {
      const row = rows[i]!;
      let j = i - 1;
      while (j >= 0 && rows[j]!.index > row.index) {
        rows[j + 1] = rows[j]!;
        j--;
      }
      rows[j + 1] = row;
    }
  } else rows.sort((a, b) => a.index - b.index);
  let w = 1;
  for (let r = 1; r < rows.length; r++) if (rows[r] !== rows[w - 1]) rows[w++] = rows[r]!;
  rows.length = w;
  return rows;
}
