/**
 * Why a request got its decision: every policy of the table with the step at which
 * it dropped out (action, agent, disabled, resource, condition) or `matched`.
 * Walks every row (the unindexed path), so it also serves as documentation of
 * what the index must agree with.
 */
import { conditionPaths } from '../condition/index.js';
import { historyReadings, type HistoryReading } from '../history/probes-of.js';
import { probeText } from '../history/probe.js';
import type { EvaluationInput, Policy } from '../policy/types.js';
import { isEnforced, type DecisionTable } from './build.js';
import { compareShadow, decide, type Evaluation } from './evaluate.js';
import { actionMatches, agentMatches, conditionHolds, resourceMatches, type PolicyRow } from './rows.js';

export type DropStep = 'action' | 'agent' | 'disabled' | 'resource' | 'condition';

export interface PolicyTrace {
  policy: Policy;
  /** For a shadow policy: where it drops out (or `matched`) when the shadow policies are enabled. */
  outcome: 'matched' | DropStep;
  detail: string;
  /** Set on shadow policies (state `shadow`): not part of the decision, only of its shadow outcome. */
  shadow?: true;
}

export interface Explanation {
  /** As {@link evaluate} gives it (with `shadow` when the shadow outcome differs). */
  evaluation: Evaluation;
  /** The full evaluation with the shadow policies enabled; present when the table has shadow policies. */
  withShadow?: Evaluation;
  trace: PolicyTrace[];
  /** The history the candidate policies read, with the values the request's provider gave (empty when none reads history). */
  history: HistoryReading[];
}

/**
 * Why a request gets its decision: the evaluation, and every policy of the table
 * in rank order with the step at which it dropped out (`action`, `agent`,
 * `disabled`, `resource`, `condition`, with the values the condition read, history
 * values included) or `matched`, and the history the candidate policies read.
 * Walks every row; what `authz explain` prints. Never throws.
 *
 * @param table - a compiled table.
 * @param request - the decision request.
 * @returns the evaluation (as {@link evaluate}'s) and the trace.
 *
 * @example
 * ```ts
 * import { compileSources, explain } from 'agent-authz/compiler';
 *
 * const text = 'name: small-refunds\neffect: allow\nactions: [payments.refund]\ncondition: amount <= 50\n';
 * const { table } = compileSources([{ file: 'p.yaml', text }]);
 * const { evaluation, trace } = explain(table, { agent_id: 'bot', action: 'payments.refund', amount: 80 });
 * console.log(evaluation.effect, trace[0].outcome); // => deny condition
 * console.log(trace[0].detail); // => condition is false: amount <= 50 (amount = 80)
 * ```
 */
export function explain(table: DecisionTable, request: EvaluationInput): Explanation {
  const trace: PolicyTrace[] = [];
  const candidates: PolicyRow[] = [];
  const shadowCandidates: PolicyRow[] = [];
  const shadowRows = new Map(table.shadow?.rows.map((r) => [r.index, r]));
  for (const row of table.rows) {
    const p = row.policy;
    const shadow = !isEnforced(row);
    const push = (t: PolicyTrace) => trace.push(shadow ? { ...t, shadow: true } : t);
    if (!actionMatches(row, request.action)) {
      push({ policy: p, outcome: 'action', detail: `action ${request.action} matches none of ${list(p.actions)}` });
      continue;
    }
    if (!agentMatches(row, request.agent_id)) {
      push({ policy: p, outcome: 'agent', detail: `agent ${request.agent_id} matches none of ${list(p.agents!)}` });
      continue;
    }
    if (shadow) shadowCandidates.push(shadowRows.get(row.index)!);
    else candidates.push(row);
    if (!row.enabled && !shadow) {
      push({ policy: p, outcome: 'disabled', detail: 'policy is disabled (treated as non-existent)' });
    } else if (!resourceMatches(row, request.resource)) {
      const what = request.resource == null ? 'request has no resource' : `resource ${request.resource} matches none`;
      push({ policy: p, outcome: 'resource', detail: `${what} of ${list(p.resources!)}` });
    } else if (!conditionHolds(row, request)) {
      push({ policy: p, outcome: 'condition', detail: `condition is false: ${p.condition}${inputs(row, request)}` });
    } else {
      push({
        policy: p,
        outcome: 'matched',
        detail: `agent, action, resource and condition match${shadow ? ' (shadow: counts only with the shadow policies enabled)' : ''}`,
      });
    }
  }
  const evaluation = decide(candidates, request);
  const history = historyReadings(table, request);
  if (table.shadow === null) return { evaluation, trace, history };
  const withShadow = decide([...candidates, ...shadowCandidates], request);
  return { evaluation: compareShadow(evaluation, withShadow), withShadow, trace, history };
}

function list(values: readonly string[]): string {
  return `[${values.join(', ')}]`;
}

/** The values the condition read, e.g. ` (amount = 120, context.channel missing)`. */
function inputs(row: PolicyRow, request: EvaluationInput): string {
  if (!row.conditionAst) return '';
  const parts = conditionPaths(row.conditionAst).map((path) => {
    const value = path === 'session.labels' ? (request.session_labels ?? []) : readPath(request, path);
    return value === undefined ? `${path} missing` : `${path} = ${JSON.stringify(value)}`;
  });
  for (const probe of row.probes) {
    const value = request.history ? request.history(probe) : null;
    parts.push(`${probeText(probe)} ${typeof value === 'number' && Number.isFinite(value) ? `= ${value}` : 'unknown'}`);
  }
  return parts.length ? ` (${parts.join(', ')})` : '';
}

function readPath(request: EvaluationInput, path: string): unknown {
  let value: unknown = request;
  // `agent.attributes.x` reads the request's agent_attributes.
  const segments = path.startsWith('agent.attributes')
    ? ['agent_attributes', ...path.split('.').slice(2)]
    : path.split('.');
  for (const segment of segments) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}
