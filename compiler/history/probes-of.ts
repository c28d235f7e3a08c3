/**
 * Which history probes a table reads: all of them (what the runtime must
 * record a decision for) and those of a request's candidate policies (what it
 * must compute before evaluating that request).
 *
 * Interface placeholder until the compiler's half (issue 45) lands: both
 * answer that nothing reads history.
 */
import type { DecisionRequest } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import type { HistoryProbe } from './probe.js';

/**
 * The probes of the candidate policies (enforced and shadow rows whose agent
 * and action match the request), unique by key; empty when none reads history.
 *
 * @example
 * ```ts
 * import { compileSources, historyProbesFor } from 'agent-authz/compiler';
 *
 * const { table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: ["orders.*"]\n' }]);
 * console.log(historyProbesFor(table, { agent_id: 'bot', action: 'orders.read' }).length); // => 0
 * ```
 */
export function historyProbesFor(table: DecisionTable, request: DecisionRequest): readonly HistoryProbe[] {
  void table;
  void request;
  return [];
}

/**
 * Every probe of every policy in the table (shadow ones included), unique by key.
 *
 * @example
 * ```ts
 * import { compileSources, tableHistoryProbes } from 'agent-authz/compiler';
 *
 * const { table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: ["orders.*"]\n' }]);
 * console.log(tableHistoryProbes(table).length); // => 0
 * ```
 */
export function tableHistoryProbes(table: DecisionTable): readonly HistoryProbe[] {
  void table;
  return [];
}
