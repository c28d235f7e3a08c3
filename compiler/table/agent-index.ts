/**
 * The rows of one action-trie leaf, indexed by agent: rows naming exact agent ids
 * sit in a map, rows with agent globs apart (tested one by one), rows for every
 * agent in a list of their own. Every list is kept in row order.
 */
import { globMatches } from '../patterns/glob.js';
import type { PolicyRow } from './rows.js';

export interface AgentIndex {
  readonly exact: Map<string, PolicyRow[]>;
  readonly globs: PolicyRow[];
  readonly any: PolicyRow[];
}

export function emptyAgentIndex(): AgentIndex {
  return { exact: new Map(), globs: [], any: [] };
}

/** Adds a row (rows must be added in row order so the lists stay sorted). */
export function addToAgentIndex(index: AgentIndex, row: PolicyRow): void {
  if (row.agents === null) {
    index.any.push(row);
    return;
  }
  let hasGlob = false;
  for (const glob of row.agents) {
    if (glob.exact === undefined) {
      hasGlob = true;
      continue;
    }
    const list = index.exact.get(glob.exact);
    if (list === undefined) index.exact.set(glob.exact, [row]);
    else if (list[list.length - 1] !== row) list.push(row);
  }
  if (hasGlob) index.globs.push(row);
}

/** Appends to `out` the rows of this leaf that apply to `agentId` (may repeat a row). */
export function collectForAgent(index: AgentIndex, agentId: string, out: PolicyRow[]): void {
  const exact = index.exact.get(agentId);
  if (exact !== undefined) for (let i = 0; i < exact.length; i++) out.push(exact[i]!);
  for (let i = 0; i < index.globs.length; i++) {
    const row = index.globs[i]!;
    for (const glob of row.agents!) {
      if (glob.exact === undefined && globMatches(glob, agentId)) {
        out.push(row);
        break;
      }
    }
  }
  for (let i = 0; i < index.any.length; i++) out.push(index.any[i]!);
}
