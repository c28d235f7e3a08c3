/**
 * Replaying one stored decision (a line of `GET /v1/decisions/export`: the
 * decision resource plus its `context`, and `session_id` / `on_behalf_of` when
 * present) against a candidate table: its request (agent_id, action, resource,
 * amount, context) decided again, the outcome compared with the stored one.
 *
 * What is compared with what:
 * - A decision the table made (reason policy.matched, policy.not_found,
 *   policy.disabled, resource.not_allowed): the stored effect and reason against
 *   the candidate's. Changed when either differs.
 * - A review decision a reviewer later refused or that nobody answered in time
 *   (review.denied, review.timeout): the table had answered review /
 *   policy.matched, and that is what `from` says and what is compared.
 * - A decision denied before the table (agent.revoked, budget.exceeded, or any
 *   other reason the table does not give): `pre_table`. The request goes through
 *   the table alone; the stored deny did not come from the table, so only a
 *   candidate that would let the request through (allow or review) counts as a
 *   change: those requests are held back today by the revocation or the budget
 *   only. A table deny is consistent with the stored deny and is not a change.
 */
import { isValidAction } from '../patterns/action.js';
import type { EvaluationInput, Effect } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import { evaluate, type EvaluationReason } from '../table/evaluate.js';
import type { ReplayHistory } from './history.js';

export interface Outcome {
  effect: string;
  reason: string;
}

export interface ReplayResult {
  decision_id: string;
  agent_id: string;
  action: string;
  /** The table's outcome when the decision was made (see the module's comment). */
  from: Outcome;
  to: { effect: Effect; reason: EvaluationReason };
  /** The candidate's deciding policy (null when none). */
  to_policy_id: string | null;
  /** The stored decision was denied before the table; replayed through the table alone. */
  pre_table: boolean;
  changed: boolean;
}

/** A line of the export that is not a stored decision. */
export class StoredDecisionError extends Error {}

const TABLE_REASONS: ReadonlySet<string> = new Set([
  'policy.matched',
  'policy.not_found',
  'policy.disabled',
  'resource.not_allowed',
]);
const REVIEW_REASONS: ReadonlySet<string> = new Set(['review.denied', 'review.timeout']);
const EFFECTS: ReadonlySet<string> = new Set(['allow', 'deny', 'review']);

function fail(what: string): never {
  throw new StoredDecisionError(what);
}

/**
 * Decides a stored decision's request again against `table` and compares.
 *
 * @param table - the candidate's table.
 * @param value - one parsed line of the export.
 * @param history - the export's earlier decisions, when the candidate reads history: the
 *   request reads their values at its `evaluated_at`, and the decision joins them.
 * @returns the comparison.
 * @throws StoredDecisionError when `value` is not a stored decision.
 */
export function replayDecision(
  table: DecisionTable,
  value: unknown,
  history: ReplayHistory | null = null,
): ReplayResult {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail('not a JSON object');
  const d = value as Record<string, unknown>;
  const id = d.id;
  const agent = d.agent_id;
  const action = d.action;
  const effect = d.effect;
  const reason = d.reason;
  if (typeof id !== 'string' || id === '') fail('no decision id');
  if (typeof agent !== 'string' || agent === '') fail(`${id}: no agent_id`);
  if (typeof action !== 'string' || !isValidAction(action)) fail(`${id}: no valid action`);
  if (typeof effect !== 'string' || !EFFECTS.has(effect)) fail(`${id}: no valid effect`);
  if (typeof reason !== 'string') fail(`${id}: no reason`);
  const request: EvaluationInput & Record<string, unknown> = { agent_id: agent, action };
  const resource = d.resource;
  if (typeof resource === 'string') request.resource = resource;
  else if (resource != null) fail(`${id}: resource is not a string`);
  const amount = d.amount;
  if (typeof amount === 'number') request.amount = amount;
  else if (amount != null) fail(`${id}: amount is not a number`);
  const context = d.context;
  if (context != null) {
    if (typeof context !== 'object' || Array.isArray(context)) fail(`${id}: context is not an object`);
    request.context = context as Record<string, unknown>;
  }
  // Read by conditions where the policy language has them (agent runs); harmless otherwise.
  if (typeof d.session_id === 'string') request.session_id = d.session_id;
  if (typeof d.on_behalf_of === 'string') request.on_behalf_of = d.on_behalf_of;

  if (history) {
    const atMs = typeof d.evaluated_at === 'string' ? Date.parse(d.evaluated_at) : NaN;
    if (!Number.isFinite(atMs)) fail(`${id}: no valid evaluated_at`);
    request.history = history.valuesAt(request, atMs);
  }
  const evaluation = evaluate(table, request);
  history?.add(d);
  const to = { effect: evaluation.effect, reason: evaluation.reason };
  if (TABLE_REASONS.has(reason) || REVIEW_REASONS.has(reason)) {
    const from = REVIEW_REASONS.has(reason) ? { effect: 'review', reason: 'policy.matched' } : { effect, reason };
    const changed = from.effect !== to.effect || from.reason !== to.reason;
    return {
      decision_id: id,
      agent_id: agent,
      action,
      from,
      to,
      to_policy_id: evaluation.policy_id,
      pre_table: false,
      changed,
    };
  }
  return {
    decision_id: id,
    agent_id: agent,
    action,
    from: { effect, reason },
    to,
    to_policy_id: evaluation.policy_id,
    pre_table: true,
    changed: to.effect !== 'deny',
  };
}
