/**
 * Why a request got its decision: every policy of the table with the step at which
 * it dropped out (action, agent, disabled, resource, condition) or `matched`.
 * Walks every row (the unindexed path), so it also serves as documentation of
 * what the index must agree with.
 */
import { conditionPaths } from '../condition/index.js';
import type { DecisionRequest, Policy } from '../policy/types.js';
import type { DecisionTable } from './build.js';
import { decide, type Evaluation } from './evaluate.js';
import { actionMatches, agentMatches, conditionHolds, resourceMatches, type PolicyRow } from './rows.js';

export type DropStep = 'action' | 'agent' | 'disabled' | 'resource' | 'condition';

export interface PolicyTrace {
  policy: Policy;
  outcome: 'matched' | DropStep;
  detail: string;
}

export interface Explanation {
  evaluation: Evaluation;
  trace: PolicyTrace[];
}

/**
 * Why a request gets its decision: the evaluation, and every policy of the table
 * in rank order with the step at which it dropped out (`action`, `agent`,
 * `disabled`, `resource`, `condition`, with the values the condition read) or
 * `matched`. Walks every row; what `authz explain` prints. Never throws.
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
export function explain(table: DecisionTable, request: DecisionRequest): Explanation {
  const trace: PolicyTrace[] = [];
  const candidates: PolicyRow[] = [];
  for (const row of table.rows) {
    const p = row.policy;
    if (!actionMatches(row, request.action)) {
      trace.push({ policy: p, outcome: 'action', detail: `action ${request.action} matches none of ${list(p.actions)}` });
      continue;
    }
    if (!agentMatches(row, request.agent_id)) {
      trace.push({ policy: p, outcome: 'agent', detail: `agent ${request.agent_id} matches none of ${list(p.agents!)}` });
      continue;
    }
    candidates.push(row);
    if (!row.enabled) {
      trace.push({ policy: p, outcome: 'disabled', detail: 'policy is disabled (treated as non-existent)' });
    } else if (!resourceMatches(row, request.resource)) {
      const what = request.resource == null ? 'request has no resource' : `resource ${request.resource} matches none`;
      trace.push({ policy: p, outcome: 'resource', detail: `${what} of ${list(p.resources!)}` });
    } else if (!conditionHolds(row, request)) {
      trace.push({ policy: p, outcome: 'condition', detail: `condition is false: ${p.condition}${inputs(row, request)}` });
    } else {
      trace.push({ policy: p, outcome: 'matched', detail: 'agent, action, resource and condition match' });
    }
  }
  return { evaluation: decide(candidates, request), trace };
}

function list(values: readonly string[]): string {
  return `[${values.join(', ')}]`;
}

/** The values the condition read, e.g. ` (amount = 120, context.channel missing)`. */
function inputs(row: PolicyRow, request: DecisionRequest): string {
  if (!row.conditionAst) return '';
  const parts = conditionPaths(row.conditionAst).map((path) => {
    const value = readPath(request, path);
    return value === undefined ? `${path} missing` : `${path} = ${JSON.stringify(value)}`;
  });
  return parts.length ? ` (${parts.join(', ')})` : '';
}

function readPath(request: DecisionRequest, path: string): unknown {
  let value: unknown = request;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}
