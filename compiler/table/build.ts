/**
 * Building a decision table from normalised policies (and their parsed
 * conditions): rows ranked once, then indexed by action and agent.
 */
import type { ConditionAst } from '../condition/index.js';
import type { Policy } from '../policy/types.js';
import { emptyActionTrie, insertRow, type ActionTrie } from './action-trie.js';
import { buildRow, comparePolicies, shadowRow, type PolicyRow } from './rows.js';

export interface DecisionTable {
  /** Every policy's row, shadow ones included, in rank order (row.index increases along it; equal to the position in a built table, not always in a patched one). */
  readonly rows: readonly PolicyRow[];
  /** The index of the rows enforcement sees: enabled and disabled policies (never shadow ones). */
  readonly trie: ActionTrie;
  readonly byId: ReadonlyMap<string, PolicyRow>;
  /** The shadow policies (state `shadow`), indexed apart; null when the set has none. */
  readonly shadow: ShadowRows | null;
}

/**
 * The shadow part of a table: a row per shadow policy, enabled and with its rank
 * among all rows, in its own index. Deciding with the enforcement candidates plus
 * these gives the outcome with the shadow policies enabled; a table without
 * shadow policies has none, and its decisions never look here.
 */
export interface ShadowRows {
  readonly rows: readonly PolicyRow[];
  readonly trie: ActionTrie;
}

/** Whether a row belongs to enforcement (its policy is not in the shadow state). */
export function isEnforced(row: PolicyRow): boolean {
  return row.policy.state !== 'shadow';
}

/** The shadow part of a table with these rows (null when none is a shadow policy). */
export function shadowRowsOf(rows: readonly PolicyRow[]): ShadowRows | null {
  let shadow: PolicyRow[] | null = null;
  for (const row of rows) if (!isEnforced(row)) (shadow ??= []).push(shadowRow(row));
  if (shadow === null) return null;
  const trie = emptyActionTrie();
  for (const row of shadow) insertRow(trie, row);
  return { rows: shadow, trie };
}

/** Rows between two points where a stepped build may pause. */
export const ROWS_PER_STEP = 256;

/**
 * Builds the decision table: rows ranked once (priority, then deny before review
 * before allow, then id), indexed by action and agent. Pauses (yield) every
 * {@link ROWS_PER_STEP} rows of each loop: a service can rebuild a large set in
 * slices between its requests instead of stalling them; the CLI runs it straight
 * through ({@link runSteps}). This step alone checks nothing (no duplicate ids,
 * no lints): {@link compileItems} and {@link compileSources} are the checked way
 * to a table.
 *
 * @param policies - normalised, valid policies with unique ids.
 * @param conditions - the parsed, checked condition of each policy id that has one.
 * @returns a generator whose return value is the DecisionTable.
 *
 * @example
 * ```ts
 * import { buildTableSteps, evaluate, readPolicyValue, runSteps } from 'agent-authz/compiler';
 *
 * const { items } = readPolicyValue({ name: 'small-refunds', effect: 'allow', actions: ['payments.refund'], condition: 'amount <= 50' });
 * const conditions = new Map(items.filter((i) => i.condition).map((i) => [i.policy.id, i.condition]));
 * const table = runSteps(buildTableSteps(items.map((i) => i.policy), conditions));
 * console.log(evaluate(table, { agent_id: 'bot', action: 'payments.refund', amount: 20 }).effect); // => allow
 * ```
 */
export function* buildTableSteps(
  policies: readonly Policy[],
  conditions: ReadonlyMap<string, ConditionAst>,
): Generator<void, DecisionTable> {
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
    if (isEnforced(rows[i]!)) insertRow(trie, rows[i]!);
    if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  return { rows, trie, byId, shadow: shadowRowsOf(rows) };
}

export function tableFromRows(rows: PolicyRow[], trie?: ActionTrie): DecisionTable {
  const byId = new Map<string, PolicyRow>();
  for (const row of rows) byId.set(row.policy.id, row);
  if (!trie) {
    trie = emptyActionTrie();
    for (const row of rows) if (isEnforced(row)) insertRow(trie, row);
  }
  return { rows, trie, byId, shadow: shadowRowsOf(rows) };
}

/**
 * Runs a stepped computation ({@link compileItemsSteps}, {@link buildTableSteps})
 * to its end without pausing, and returns its result.
 *
 * @param steps - the generator.
 * @returns the generator's return value.
 *
 * @example
 * ```ts
 * import { compileItemsSteps, readPolicyValue, runSteps } from 'agent-authz/compiler';
 *
 * const { items } = readPolicyValue({ name: 'read-orders', effect: 'allow', actions: ['orders.read'] });
 * console.log(runSteps(compileItemsSteps(items)).table.rows.length); // => 1
 * ```
 */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
