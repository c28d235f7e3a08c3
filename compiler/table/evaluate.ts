/**
 * Deciding a request against a table: steps 4-6 of the evaluation order
 * (docs/policies.md#how-a-request-is-decided). Candidate selection has two interchangeable paths, the index (action trie
 * + agent index) and a linear scan of every row, which is the reference the index
 * is property-tested against and what `explain` walks; both feed one `decide`.
 */
import type { EvaluationInput, Effect, Policy } from '../policy/types.js';
import { collectCandidates, sortUnique } from './action-trie.js';
import type { Tally } from './agent-index.js';
import { isEnforced, type DecisionTable, type ShadowRows } from './build.js';
import { actionMatches, agentMatches, conditionHolds, resourceMatches, type PolicyRow } from './rows.js';

export type EvaluationReason = 'policy.matched' | 'policy.not_found' | 'policy.disabled' | 'resource.not_allowed';

export interface EvaluationWarning {
  code: 'policy.conflict';
  message: string;
  policy_ids: string[];
}

export interface Evaluation {
  effect: Effect;
  reason: EvaluationReason;
  /** The deciding policy; null when none matched. */
  policy_id: string | null;
  /** Every enabled policy that matched (agent, action, resource, condition), in rank order. */
  matched: Policy[];
  warnings: EvaluationWarning[];
  /**
   * The outcome with the shadow policies enabled, present only when the table has
   * shadow policies and that outcome differs from this one in effect or reason.
   */
  shadow?: ShadowOutcome;
}

/** What a decision would be with the shadow policies enabled (`policy_id`: the winner then, null when none). */
export interface ShadowOutcome {
  effect: Effect;
  reason: EvaluationReason;
  policy_id: string | null;
}

/**
 * Decides a request against a table (docs/policies.md#how-a-request-is-decided, steps 4-6):
 * the enabled policies matching agent, action, resource and condition, the
 * highest-ranked of them deciding (lower priority number first; at equal priority
 * deny, then review, then allow). No match is a deny with reason
 * `policy.not_found`, `policy.disabled` (only disabled policies matched) or
 * `resource.not_allowed` (allows matched but not on this resource). Matching
 * policies that disagree add a `policy.conflict` warning. Shadow policies
 * (`state: shadow`) take no part in any of this; when the table has some, the
 * outcome with them enabled is worked out too and returned as `shadow` if its
 * effect or reason differs ({@link evaluateWithShadow} gives it in full). Uses
 * the table's index; never throws.
 *
 * @param table - a compiled table (`compileSources(...).table`, `loadBundle(...).table`).
 * @param request - `{ agent_id, action, resource?, amount?, context? }`.
 * @returns the effect, the reason, the deciding policy id (null when none), every
 *   matching policy in rank order, warnings, and `shadow` when the outcome with
 *   the shadow policies enabled differs.
 *
 * @example
 * ```ts
 * import { compileSources, evaluate } from 'agent-authz/compiler';
 *
 * const text = [
 *   'policies:',
 *   '  - { name: small-refunds, effect: allow, actions: [payments.refund], resources: ["order:*"], condition: "amount <= 50" }',
 *   '  - { name: disputed, effect: deny, actions: [payments.refund], condition: "context.dispute_open == true" }',
 * ].join('\n');
 * const { table } = compileSources([{ file: 'refunds.yaml', text }]);
 * const request = { agent_id: 'support-bot-1', action: 'payments.refund', resource: 'order:7', amount: 20 };
 *
 * const d = evaluate(table, request);
 * console.log(d.effect, d.reason, d.policy_id); // => allow policy.matched pol_small_refunds
 * const disputed = evaluate(table, { ...request, context: { dispute_open: true } });
 * console.log(disputed.effect, disputed.warnings[0].code); // => deny policy.conflict
 * console.log(evaluate(table, { ...request, resource: 'customer:7' }).reason); // => resource.not_allowed
 * ```
 */
export function evaluate(table: DecisionTable, request: EvaluationInput): Evaluation {
  const tally: Tally = { enabled: 0, disabled: 0, allowCandidates: 0, allowResourceDrops: 0 };
  const candidates = collectCandidates(table.trie, request.agent_id, request.action, {
    resource: request.resource,
    tally,
  });
  const evaluation = decide(candidates, request, tally);
  // A set without shadow policies stops here: one null check is all they cost.
  if (table.shadow === null) return evaluation;
  return compareShadow(evaluation, shadowDecision(table.shadow, candidates, tally, request));
}

/**
 * {@link evaluate} without the index: scans every row. Always gives the same
 * answer as evaluate (property-tested); slower on large sets. The reference for
 * checking the index.
 *
 * @param table - a compiled table.
 * @param request - the decision request.
 * @returns the same Evaluation as evaluate.
 *
 * @example
 * ```ts
 * import { compileSources, evaluate, evaluateLinear } from 'agent-authz/compiler';
 *
 * const { table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: ["orders.*"]\n' }]);
 * const request = { agent_id: 'bot', action: 'orders.read' };
 * console.log(JSON.stringify(evaluateLinear(table, request)) === JSON.stringify(evaluate(table, request))); // => true
 * ```
 */
export function evaluateLinear(table: DecisionTable, request: EvaluationInput): Evaluation {
  const candidates = linearCandidates(table, request);
  const evaluation = decide(candidates, request);
  if (table.shadow === null) return evaluation;
  return compareShadow(evaluation, decide([...candidates, ...linearShadowCandidates(table.shadow, request)], request));
}

/** The enforcement rows (no shadow policy) whose agent filter and action pattern match, in rank order, by scanning all. */
export function linearCandidates(table: DecisionTable, request: EvaluationInput): PolicyRow[] {
  return table.rows.filter(
    (row) => isEnforced(row) && agentMatches(row, request.agent_id) && actionMatches(row, request.action),
  );
}

/** The shadow rows (enabled) whose agent filter and action pattern match, by scanning all. */
export function linearShadowCandidates(shadow: ShadowRows, request: EvaluationInput): PolicyRow[] {
  return shadow.rows.filter((row) => agentMatches(row, request.agent_id) && actionMatches(row, request.action));
}

/**
 * Decides a request with the shadow policies enabled: the full evaluation
 * (winner, every matching policy, warnings) as if every `state: shadow` policy
 * were `enabled`. Without shadow policies, the same as {@link evaluate}. What
 * `authz test --coverage` and `authz explain` use to show shadow policies at work.
 *
 * @param table - a compiled table.
 * @param request - the decision request.
 * @returns the evaluation with the shadow policies enabled (no `shadow` field).
 *
 * @example
 * ```ts
 * import { compileSources, evaluate, evaluateWithShadow } from 'agent-authz/compiler';
 *
 * const text = [
 *   'policies:',
 *   '  - { name: refunds, effect: allow, actions: [payments.refund] }',
 *   '  - { name: big-refunds-review, state: shadow, priority: 10, effect: review, actions: [payments.refund], condition: "amount > 100" }',
 * ].join('\n');
 * const { table } = compileSources([{ file: 'p.yaml', text }]);
 * const request = { agent_id: 'bot', action: 'payments.refund', amount: 500 };
 * const d = evaluate(table, request);
 * console.log(d.effect, d.policy_id, d.shadow.effect, d.shadow.policy_id); // => allow pol_refunds review pol_big_refunds_review
 * console.log(evaluateWithShadow(table, request).matched.map((p) => p.id).join()); // => pol_big_refunds_review,pol_refunds
 * console.log(evaluate(table, { ...request, amount: 5 }).shadow); // => undefined
 * ```
 */
export function evaluateWithShadow(table: DecisionTable, request: EvaluationInput): Evaluation {
  const tally: Tally = { enabled: 0, disabled: 0, allowCandidates: 0, allowResourceDrops: 0 };
  const candidates = collectCandidates(table.trie, request.agent_id, request.action, {
    resource: request.resource,
    tally,
  });
  if (table.shadow === null) return decide(candidates, request, tally);
  return shadowDecision(table.shadow, candidates, tally, request) ?? decide(candidates, request, tally);
}

/**
 * The decision with the shadow rows added to the enforcement candidates (and
 * their tally); null when no shadow row concerns the request's agent and action,
 * so the outcome cannot differ.
 */
function shadowDecision(
  shadow: ShadowRows,
  candidates: PolicyRow[],
  tally: Tally,
  request: EvaluationInput,
): Evaluation | null {
  const shadowTally: Tally = { enabled: 0, disabled: 0, allowCandidates: 0, allowResourceDrops: 0 };
  const extra = collectCandidates(shadow.trie, request.agent_id, request.action, {
    resource: request.resource,
    tally: shadowTally,
  });
  if (extra.length === 0 && shadowTally.enabled === 0) return null;
  const sum: Tally = {
    enabled: tally.enabled + shadowTally.enabled,
    disabled: tally.disabled + shadowTally.disabled,
    allowCandidates: tally.allowCandidates + shadowTally.allowCandidates,
    allowResourceDrops: tally.allowResourceDrops + shadowTally.allowResourceDrops,
  };
  return decide(candidates.concat(extra), request, sum);
}

/** `evaluation`, with `shadow` set when the outcome with the shadow policies differs in effect or reason. */
export function compareShadow(evaluation: Evaluation, withShadow: Evaluation | null): Evaluation {
  if (withShadow === null || (withShadow.effect === evaluation.effect && withShadow.reason === evaluation.reason))
    return evaluation;
  evaluation.shadow = { effect: withShadow.effect, reason: withShadow.reason, policy_id: withShadow.policy_id };
  return evaluation;
}

/**
 * Decides from the candidates: the rows matching agent and action, disabled ones
 * included, in any order and possibly repeated (a repeat counts the same way on
 * both sides of every comparison below, so the counts still decide correctly);
 * the surviving rows are put in rank order and made unique at the end.
 */
export function decide(candidates: readonly PolicyRow[], request: EvaluationInput, skipped?: Tally): Evaluation {
  // Rows the index already dropped on resource (whole groups) count as if seen here.
  let enabled = skipped?.enabled ?? 0;
  let disabled = skipped?.disabled ?? 0;
  let allowCandidates = skipped?.allowCandidates ?? 0;
  let allowResourceDrops = skipped?.allowResourceDrops ?? 0;
  let survivors: PolicyRow[] | null = null;
  // Rows sharing one resource pattern list (rows.ts) are checked once per run of them.
  let lastResources: PolicyRow['resources'] | undefined;
  let lastResourceOk = false;
  for (let i = 0; i < candidates.length; i++) {
    const row = candidates[i]!;
    if (!row.enabled) {
      disabled++;
      continue;
    }
    enabled++;
    const isAllow = row.isAllow;
    if (isAllow) allowCandidates++;
    if (row.resources !== lastResources) {
      lastResources = row.resources;
      lastResourceOk = resourceMatches(row, request.resource);
    }
    if (!lastResourceOk) {
      if (isAllow) allowResourceDrops++;
      continue;
    }
    if (!conditionHolds(row, request)) continue;
    (survivors ??= []).push(row);
  }
  if (survivors === null) {
    if (enabled === 0 && disabled > 0)
      return { effect: 'deny', reason: 'policy.disabled', policy_id: null, matched: [], warnings: [] };
    if (allowCandidates > 0 && allowResourceDrops === allowCandidates) {
      return { effect: 'deny', reason: 'resource.not_allowed', policy_id: null, matched: [], warnings: [] };
    }
    return { effect: 'deny', reason: 'policy.not_found', policy_id: null, matched: [], warnings: [] };
  }
  // From the rows' copies of effect and id: the policies themselves are not read here.
  const rows = survivors.length > 1 ? sortUnique(survivors) : survivors;
  const first = rows[0]!;
  const matched = new Array<Policy>(rows.length);
  let conflict = false;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    matched[i] = row.policy;
    if (row.effect !== first.effect) conflict = true;
  }
  const warnings: EvaluationWarning[] = conflict ? [conflictWarning(first.policy, rows)] : [];
  return { effect: first.effect, reason: 'policy.matched', policy_id: first.id, matched, warnings };
}

function conflictWarning(winner: Policy, matched: readonly PolicyRow[]): EvaluationWarning {
  const ids = new Array<string>(matched.length);
  for (let i = 0; i < matched.length; i++) ids[i] = matched[i]!.id;
  return {
    code: 'policy.conflict',
    message: `${matched.length} matching policies disagree on the effect; ${winner.id} (priority ${winner.priority}, ${winner.effect}) decided`,
    policy_ids: ids,
  };
}
