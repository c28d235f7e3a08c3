/** The public form of a decision (docs/api.md#decisions). */
import { publicStatus, type DecisionPreview } from '../domain/decision-state.js';
import type { DecisionRow } from '../store/decisions.js';
import type { Decision, DecisionPreview as DecisionPreviewBody, Review } from '../../clients/typescript/wire.js';

/** A decision's public form; without `permit_token` for `withToken: false` (the decision in an event's data). */
export function decisionResource(
  row: DecisionRow,
  nowMs: number,
  options: { withToken: false },
): Omit<Decision, 'permit_token'>;
export function decisionResource(row: DecisionRow, nowMs: number, options?: { withToken?: true }): Decision;
export function decisionResource(
  row: DecisionRow,
  nowMs: number,
  options: { withToken?: boolean } = {},
): Decision | Omit<Decision, 'permit_token'> {
  return {
    id: row.id,
    object: 'decision',
    effect: row.effect,
    reason: row.reason,
    agent_id: row.agent_id,
    action: row.action,
    resource: row.resource,
    amount: row.amount,
    policy_id: row.policy_id,
    status: publicStatus(row, nowMs),
    evaluated_at: row.evaluated_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    ttl_seconds: row.ttl_seconds,
    ...(options.withToken === false ? {} : { permit_token: row.permit_token }),
    livemode: row.environment === 'live',
    resolved_at: row.resolved_at ? row.resolved_at.toISOString() : null,
    confirmed_amount: row.confirmed_amount,
    // Extensions (docs/api.md#decisions): the request's context as stored, the run and the user.
    context: row.context,
    session_id: row.session_id,
    on_behalf_of: row.on_behalf_of,
    ...(row.args_digest === null ? {} : { args_digest: row.args_digest }),
    // Extensions (docs/reviews.md#the-rules).
    review: reviewResource(row),
    approval_expires_at: row.approval_expires_at ? row.approval_expires_at.toISOString() : null,
    // Extension (docs/api.md#post-v1decisionsidoutput-extension): what the gateway read in the result, null until recorded.
    output: row.output ?? null,
    metadata: {
      matched_policy_ids: row.matched_policy_ids,
      warnings: row.warnings,
      ...(row.shadow ? { shadow: row.shadow } : {}),
      // Extension (docs/policies.md#labels): only when a candidate policy read or added labels.
      ...(row.session_labels ? { session_labels: row.session_labels } : {}),
      // Extension (docs/history.md): the history values the candidate policies read.
      ...(row.history ? { history: row.history } : {}),
    },
  };
}

/**
 * A decision's review (extension): null unless a review policy decided it;
 * `request_context` only once an AuthZEN access request was submitted for it. The
 * reviewing key's id is kept in the store for audit and not answered.
 *
 * @example
 * reviewResource(row); // => { status: 'approved', reviewer: 'alice', note: 'ok', reviewed_at: '2026-11-21T10:05:00.000Z' }
 */
export function reviewResource(row: DecisionRow): Review | null {
  if (row.review_status === null) return null;
  return {
    status: row.review_status,
    reviewer: row.reviewer,
    note: row.review_note,
    reviewed_at: row.reviewed_at ? row.reviewed_at.toISOString() : null,
    // The context of the AuthZEN access request submitted for it (migration 020), only when one was.
    ...(row.review_request_context === null || row.review_request_context === undefined
      ? {}
      : { request_context: row.review_request_context }),
  };
}

/** POST /v1/decisions/preview: what a decision would be now (`approval_required` is not shown). */
export function previewResource(p: DecisionPreview): DecisionPreviewBody {
  return {
    object: 'decision_preview',
    effect: p.effect,
    reason: p.reason,
    policy_id: p.policy_id,
    matched_policy_ids: p.matched_policy_ids,
    warnings: p.warnings,
    ...(p.shadow ? { shadow: p.shadow } : {}),
    ...(p.history ? { history: p.history } : {}),
    ...(p.retry_after_seconds === undefined ? {} : { retry_after_seconds: p.retry_after_seconds }),
  };
}

/**
 * A stored answer (an Idempotency-Key's) as a replay sends it again: the
 * decisions it carried a permit for, and the answer with their fresh permits
 * (a permit is a bearer credential: the stored form has none).
 */
export interface ReplayableAnswer {
  /** The decisions whose permit the answer carries, in the answer's order. */
  permitIds: string[];
  /** The answer with `tokens` (in the order of `permitIds`) as their permit tokens. */
  withPermits(tokens: ReadonlyArray<string | null>): string;
}

/**
 * The form of POST /v1/decisions' answer an Idempotency-Key stores: `permit_token` null.
 *
 * @example
 * decisionAnswerToStore('{"id":"dec_1","permit_token":"eyJ..."}'); // => '{"id":"dec_1","permit_token":null}'
 */
export function decisionAnswerToStore(body: string): string {
  return JSON.stringify({ ...(JSON.parse(body) as object), permit_token: null });
}

/**
 * POST /v1/decisions' stored answer, for a replay: its decision carries a
 * permit unless it awaited approval (that one has its permit from POST
 * /v1/decisions/:id/permit only, and stays null).
 *
 * @example
 * const answer = replayableDecisionAnswer(stored);
 * answer.withPermits(await decisions.replayPermits(principal, answer.permitIds));
 */
export function replayableDecisionAnswer(stored: string): ReplayableAnswer {
  const answer = JSON.parse(stored) as { id: string; status: string; permit_token: string | null };
  const permitIds = answer.status === 'awaiting_approval' ? [] : [answer.id];
  return {
    permitIds,
    withPermits(tokens) {
      if (permitIds.length > 0) answer.permit_token = tokens[0] ?? null;
      return JSON.stringify(answer);
    },
  };
}
