/** The public form of a decision (docs/api.md#decisions). */
import type { DecisionPreview } from '../domain/decisions.js';
import type { DecisionRow } from '../store/decisions.js';

export type PublicStatus = DecisionRow['status'] | 'expired';

export function publicStatus(row: DecisionRow, nowMs: number): PublicStatus {
  return row.status === 'pending' && row.expires_at.getTime() <= nowMs ? 'expired' : row.status;
}

export function decisionResource(row: DecisionRow, nowMs: number, options: { withToken?: boolean } = {}): Record<string, unknown> {
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
    metadata: { matched_policy_ids: row.matched_policy_ids, warnings: row.warnings, ...(row.shadow ? { shadow: row.shadow } : {}) },
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
export function reviewResource(row: DecisionRow): Record<string, unknown> | null {
  if (row.review_status === null) return null;
  return {
    status: row.review_status,
    reviewer: row.reviewer,
    note: row.review_note,
    reviewed_at: row.reviewed_at ? row.reviewed_at.toISOString() : null,
    // The context of the AuthZEN access request submitted for it (migration 020), only when one was.
    ...(row.review_request_context === null || row.review_request_context === undefined ? {} : { request_context: row.review_request_context }),
  };
}

/** A preview's public form (without `object`, which the route sets). */
export function previewResource(p: DecisionPreview): Record<string, unknown> {
  return {
    effect: p.effect,
    reason: p.reason,
    policy_id: p.policy_id,
    matched_policy_ids: p.matched_policy_ids,
    warnings: p.warnings,
    ...(p.shadow ? { shadow: p.shadow } : {}),
    ...(p.retry_after_seconds === undefined ? {} : { retry_after_seconds: p.retry_after_seconds }),
  };
}
