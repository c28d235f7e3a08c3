/**
 * Which history probes a table reads: all of them (what the runtime must
 * record a decision for) and those of a request's candidate policies (what it
 * must compute before evaluating that request). Each row carries its own
 * probes (computed once, when the row is built), so a request costs one
 * candidate lookup, and nothing at all for a table without history.
 */
import type { EvaluationInput } from '../policy/types.js';
import { collectCandidates } from '../table/action-trie.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';
import type { HistoryFunction, HistoryProbe, HistoryScope } from './probe.js';

const NONE: readonly HistoryProbe[] = Object.freeze([]);
const byTable = new WeakMap<DecisionTable, readonly HistoryProbe[]>();

/** A table's candidate probes already found, per action then agent (the candidates depend on these two alone). */
interface Found {
  byAction: Map<string, Map<string, readonly HistoryProbe[]>>;
  /** How many lists it holds: many distinct agents and actions must not grow it without bound. */
  lists: number;
}
const MAX_FOUND = 10_000;
const foundByTable = new WeakMap<DecisionTable, Found>();

function addProbes(rows: readonly PolicyRow[], into: Map<string, HistoryProbe>, enabledOnly: boolean): void {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (row.probes.length === 0 || (enabledOnly && !row.enabled)) continue;
    for (const probe of row.probes) if (!into.has(probe.key)) into.set(probe.key, probe);
  }
}

/**
 * The probes of the candidate policies (enforced and shadow rows whose agent
 * and action match the request; disabled ones never evaluate), unique by key;
 * empty when none reads history. Remembered per table, action and agent (the
 * candidates depend on those alone), so a table's busy requests find them once.
 *
 * @example
 * ```ts
 * import { compileSources, historyProbesFor } from 'agent-authz/compiler';
 *
 * const text = [
 *   'policies:',
 *   "  - { name: reads, effect: allow, actions: ['orders.*'] }",
 *   "  - { name: refunds, effect: allow, actions: [payments.refund], condition: \"history.count('payments.refund', '1h') < 3\" }",
 * ].join('\n');
 * const { table } = compileSources([{ file: 'p.yaml', text }]);
 * console.log(historyProbesFor(table, { agent_id: 'bot', action: 'orders.read' }).length); // => 0
 * console.log(historyProbesFor(table, { agent_id: 'bot', action: 'payments.refund' })[0].key); // => count|payments.refund|3600|session|
 * ```
 */
export function historyProbesFor(table: DecisionTable, request: EvaluationInput): readonly HistoryProbe[] {
  if (tableHistoryProbes(table).length === 0) return NONE;
  let found = foundByTable.get(table);
  if (found === undefined) foundByTable.set(table, (found = { byAction: new Map(), lists: 0 }));
  let byAgent = found.byAction.get(request.action);
  const known = byAgent?.get(request.agent_id);
  if (known !== undefined) return known;
  const probes = candidateProbes(table, request);
  if (found.lists >= MAX_FOUND) {
    found.byAction.clear();
    found.lists = 0;
    byAgent = undefined;
  }
  if (byAgent === undefined) found.byAction.set(request.action, (byAgent = new Map()));
  byAgent.set(request.agent_id, probes);
  found.lists++;
  return probes;
}

function candidateProbes(table: DecisionTable, request: EvaluationInput): readonly HistoryProbe[] {
  const found = new Map<string, HistoryProbe>();
  addProbes(collectCandidates(table.trie, request.agent_id, request.action), found, true);
  if (table.shadow !== null)
    addProbes(collectCandidates(table.shadow.trie, request.agent_id, request.action), found, true);
  return found.size === 0 ? NONE : Object.freeze([...found.values()]);
}

/**
 * Every probe of every policy in the table (shadow and disabled ones
 * included), unique by key; computed once per table.
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
  let probes = byTable.get(table);
  if (probes === undefined) {
    const found = new Map<string, HistoryProbe>();
    addProbes(table.rows, found, false);
    probes = found.size === 0 ? NONE : Object.freeze([...found.values()]);
    byTable.set(table, probes);
  }
  return probes;
}

/** A probe a decision read and its value (the shape of a decision's `metadata.history` entries). */
export interface HistoryReading {
  fn: HistoryFunction;
  actions: readonly string[];
  window: string;
  scope: HistoryScope;
  match: readonly string[];
  /** null: unknown (the comparisons that read it were false). */
  value: number | null;
}

/**
 * The probes of the request's candidate policies ({@link historyProbesFor})
 * with the values its `history` provider gives them (null without one).
 *
 * @example
 * ```ts
 * import { compileSources, historyReadings } from 'agent-authz/compiler';
 *
 * const text = "name: few-refunds\neffect: allow\nactions: [payments.refund]\ncondition: history.count('payments.refund', '1h', 'agent') < 3\n";
 * const { table } = compileSources([{ file: 'p.yaml', text }]);
 * const [reading] = historyReadings(table, { agent_id: 'bot', action: 'payments.refund', history: () => 2 });
 * console.log(reading.fn, reading.scope, reading.value); // => count agent 2
 * ```
 */
export function historyReadings(table: DecisionTable, request: EvaluationInput): HistoryReading[] {
  return historyProbesFor(table, request).map((probe) => {
    const value = request.history ? request.history(probe) : null;
    return {
      fn: probe.fn,
      actions: probe.actions,
      window: probe.window,
      scope: probe.scope,
      match: probe.match,
      value: typeof value === 'number' && Number.isFinite(value) ? value : null,
    };
  });
}
