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

/** Rows between two points where a stepped build may pause. */
export const ROWS_PER_STEP = 256;

/**
 * Builds the table, pausing (yield) every ROWS_PER_STEP rows of each loop: a
 * service can rebuild a large set in slices between its requests instead of
 * stalling them (runtime/engine/sliced.ts); the CLI runs it straight through
 * (runSteps). `conditions` gives the parsed condition of each policy id that has
 * one; the caller (compile or bundle load) has already parsed and checked them.
 */
export function* buildTableSteps(policies: readonly Policy[], conditions: ReadonlyMap<string, ConditionAst>): Generator<void, DecisionTable> {
  const ranked = [...policies].sort(comparePolicies);
  yield;
  const rows: PolicyRow[] = [];
  for (let index = 0; index < ranked.length; index++) {
    const policy = ranked[index]!;
    rows.push(buildRow(index, policy, conditions.get(policy.id) ?? null));
    if (index % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  const byId = new Map<string, PolicyRow>();
  for (const row of rows) byId.set(row.policy.id, row);
  yield;
  const trie = emptyActionTrie();
  for (let i = 0; i < rows.length; i++) {
    insertRow(trie, rows[i]!);
    if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  return { rows, trie, byId };
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

/** Runs a stepped computation to its end, without pausing. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
