/**
 * The state of a decision at a time (`atMs`, the service clock): its public
 * status, whether it may still be used, whether its approval is overdue,
 * whether it permits (AuthZEN's `decision`), the task status of its access
 * request; and the outcome of an evaluation, which a preview answers.
 *
 * A leaf: pure functions of a stored decision's fields, importing nothing but
 * the store's row types (type-only), so the domain services, the presenters
 * and the event bodies all ask these questions the same way without importing
 * each other (test/architecture/import-graph.test.ts keeps it a leaf).
 */
import type { DecisionRow } from '../store/decisions.js';

/** A decision's status as answered: the stored one, or `expired` for a pending decision past its `expires_at`. */
export type PublicStatus = DecisionRow['status'] | 'expired';

/**
 * Whether the decision's `expires_at` has come at `atMs` (whatever its status).
 *
 * @example
 * isPastExpiry({ expires_at: new Date(1000) }, 1000); // => true
 */
export function isPastExpiry(row: Pick<DecisionRow, 'expires_at'>, atMs: number): boolean {
  return row.expires_at.getTime() <= atMs;
}

/**
 * The decision's status at `atMs`: a pending decision past its `expires_at` is
 * `expired` (nothing in the store changes when it expires).
 *
 * @example
 * publicStatus({ status: 'pending', expires_at: new Date(1000) }, 2000); // => 'expired'
 */
export function publicStatus(row: Pick<DecisionRow, 'status' | 'expires_at'>, atMs: number): PublicStatus {
  return row.status === 'pending' && isPastExpiry(row, atMs) ? 'expired' : row.status;
}

/**
 * Pending and not expired at `atMs`: it can still be confirmed or rejected, and get a permit.
 *
 * @example
 * isLive({ status: 'pending', expires_at: new Date(2000) }, 1000); // => true
 */
export function isLive(row: Pick<DecisionRow, 'status' | 'expires_at'>, atMs: number): boolean {
  return publicStatus(row, atMs) === 'pending';
}

/**
 * Whether the decision had an approval deadline and it has come at `atMs`.
 *
 * @example
 * isApprovalDeadlinePassed({ approval_expires_at: null }, 1000); // => false
 */
export function isApprovalDeadlinePassed(row: Pick<DecisionRow, 'approval_expires_at'>, atMs: number): boolean {
  return row.approval_expires_at !== null && row.approval_expires_at.getTime() <= atMs;
}

/**
 * An approval whose time is up at `atMs`: still awaiting approval past its
 * deadline (it is denied `review.timeout` when next read, or by the sweep).
 *
 * @example
 * isOverdue({ status: 'awaiting_approval', approval_expires_at: new Date(1000) }, 1000); // => true
 */
export function isOverdue(row: Pick<DecisionRow, 'status' | 'approval_expires_at'>, atMs: number): boolean {
  return row.status === 'awaiting_approval' && isApprovalDeadlinePassed(row, atMs);
}

/**
 * AuthZEN's `decision: true`: an allow, or a review that is not awaiting a
 * human's approval (an approved one, used, included).
 *
 * @example
 * permits({ effect: 'review', status: 'awaiting_approval' }); // => false
 */
export function permits(row: Pick<DecisionRow, 'effect' | 'status'>): boolean {
  return row.effect !== 'deny' && row.status !== 'awaiting_approval';
}

/** A task's status (the AuthZEN access request profile's values this service answers). */
export type TaskStatus = 'pending' | 'approved' | 'denied' | 'expired';

/**
 * The task status of a decision an access request was submitted for: awaiting
 * approval `pending`; approved (whatever followed: used, expired, refused by a
 * budget on approval) `approved`; refused by a reviewer `denied`; not reviewed
 * by the approval deadline (`review.timeout`) `expired`.
 *
 * @example
 * taskStatus({ review_status: 'open', reason: 'policy.matched' });   // => 'pending'
 * taskStatus({ review_status: 'denied', reason: 'review.timeout' }); // => 'expired'
 */
export function taskStatus(row: Pick<DecisionRow, 'review_status' | 'reason'>): TaskStatus {
  if (row.review_status === 'approved') return 'approved';
  if (row.review_status === 'denied') return row.reason === 'review.timeout' ? 'expired' : 'denied';
  return 'pending';
}

/** What the evaluation order concluded for a request (steps 2-7), before anything is stored. */
export type DecisionOutcome = Pick<
  DecisionRow,
  'effect' | 'reason' | 'policy_id' | 'matched_policy_ids' | 'warnings'
> & {
  shadow?: DecisionRow['shadow'];
  history?: DecisionRow['history'];
};

/** POST /v1/decisions/preview: what a decision would be now. */
export interface DecisionPreview extends DecisionOutcome {
  /** Set when the decision would be refused with 429 rate_limit.exceeded (then effect deny, reason rate_limit.exceeded). */
  retry_after_seconds?: number;
  /** Set when the decision would be a review awaiting a human's approval (not shown by POST /v1/decisions/preview). */
  approval_required?: true;
}
