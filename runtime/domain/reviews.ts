/**
 * Human review (docs/reviews.md): the review queue, a reviewer's verdict,
 * waiting for one (`GET /v1/decisions/:id?wait=N`), and the permit of a decision
 * once approved. What a verdict changes is domain/approvals.ts.
 */
import type { Clock } from '../clock.js';
import type { ReviewRequest } from '../../clients/typescript/wire.js';
import {
  DecisionAlreadyReviewedError,
  DecisionAwaitingApprovalError,
  DecisionExpiredError,
  DecisionNotFoundError,
  DecisionNotPendingError,
  DecisionNotReviewableError,
  SelfReviewError,
} from '../errors/api-error.js';
import type { Sql } from '../store/connect.js';
import type { DecisionRow, ReviewStatus } from '../store/decisions.js';
import type { Page, PageParams } from '../store/pagination.js';
import { rotationChain } from '../store/accounts.js';
import { listReviews } from '../store/reviews.js';
import type { Principal } from '../tenant.js';
import type { ApprovalService, VerdictInput } from './approvals.js';
import type { PermitIssuer } from './decision-ports.js';
import { isPastExpiry } from './decision-state.js';
import type { DecisionService } from './decisions.js';
import { waiterKey, type ReviewWaiters, type Wake } from './review-waiters.js';

export interface ReviewServiceDeps {
  sql: Sql;
  clock: Clock;
  decisions: DecisionService;
  approvals: ApprovalService;
  waiters: ReviewWaiters;
  permits: PermitIssuer;
}

/** The body of POST /v1/decisions/:id/review (generated from schemas/api/review-request.schema.json). */
export type ReviewBody = ReviewRequest;

/** The longest `?wait=` (seconds). */
export const MAX_WAIT_SECONDS = 60;

export class ReviewService {
  /** The read after a wake, shared by every waiter that wake woke (1,000 agents waiting on one decision: one read). */
  private readonly readsAfterWake = new WeakMap<Wake, Promise<DecisionRow>>();

  constructor(private readonly deps: ReviewServiceDeps) {}

  /** GET /v1/reviews: open ones oldest first (the queue), approved and denied ones newest first. */
  async list(principal: Principal, status: ReviewStatus, page: PageParams): Promise<Page<DecisionRow>> {
    await this.deps.approvals.timeOutOverdue(principal);
    return listReviews(this.deps.sql, principal, status, page);
  }

  /**
   * POST /v1/decisions/:id/review: 404 decision.not_found, 409
   * decision.not_reviewable (not a review decision), 403 review.self_review
   * (the key that made the decision, or any key of its rotation chain), 409
   * decision.already_reviewed.
   *
   * @example
   * await reviews.review(principal, 'dec_...', { verdict: 'deny', reviewer: 'alice', note: 'not this customer' });
   */
  async review(principal: Principal, id: string, body: ReviewBody): Promise<DecisionRow> {
    const input: VerdictInput = {
      verdict: body.verdict,
      reviewer: body.reviewer,
      note: body.note ?? null,
      keyId: principal.keyId,
    };
    // The reviewing key's rotation chain is one reviewer: the deciding key rolled into this one (or back) reviews nothing it decided.
    const sameReviewer = new Set(await rotationChain(this.deps.sql, principal.keyId));
    const row = await this.deps.approvals.review(principal, id, input, (current) => {
      if (current.review_status === null)
        return new DecisionNotReviewableError(
          `decision ${id} is ${current.effect === 'allow' ? 'an allow' : 'a deny'}: only review decisions are reviewed`,
        );
      if (current.key_id !== null && sameReviewer.has(current.key_id)) {
        const which =
          current.key_id === principal.keyId
            ? 'the API key that made'
            : 'a key rolled from (or into) the API key that made';
        return new SelfReviewError(`${which} decision ${id} cannot review it: review with another key`);
      }
      if (current.review_status !== 'open') {
        const by =
          current.reason === 'review.timeout'
            ? 'it timed out waiting for approval'
            : `${current.reviewer ?? 'a reviewer'} ${current.review_status} it`;
        return new DecisionAlreadyReviewedError(`decision ${id} is already reviewed: ${by}`);
      }
      return null;
    });
    if (!row) throw new DecisionNotFoundError(`no decision ${id}`);
    return row;
  }

  /**
   * GET /v1/decisions/:id?wait=SECONDS: the decision as soon as its review
   * changes, or when `seconds` pass (or `signal` aborts: the client left), or at
   * once when it is not awaiting approval. No store polling: the waiter sleeps
   * until woken (domain/review-waiters.ts), then the decision is read once, one
   * read for every waiter of that decision the same wake woke.
   */
  async wait(principal: Principal, id: string, seconds: number, signal?: AbortSignal): Promise<DecisionRow> {
    const { decisions, waiters, clock } = this.deps;
    const waiter = waiters.register(
      waiterKey({ accountId: principal.accountId, environment: principal.environment, decisionId: id }),
    );
    try {
      const row = await decisions.get(principal, id);
      if (row.status !== 'awaiting_approval' || row.approval_expires_at === null) return row;
      // Wake at the approval deadline too (service clock), when it comes before the wait's end.
      const untilDeadline = Math.max(0, row.approval_expires_at.getTime() - clock.now());
      const wake = await waiter.wait(Math.min(seconds * 1000, untilDeadline), signal);
      // The client left: nobody reads the answer.
      if (signal?.aborted) return row;
      if (wake === null) return await decisions.get(principal, id);
      // Started after the wake (so after the change's commit), shared by everyone it woke.
      let read = this.readsAfterWake.get(wake);
      if (!read) this.readsAfterWake.set(wake, (read = decisions.get(principal, id)));
      return await read;
    } finally {
      waiter.cancel();
    }
  }

  /**
   * POST /v1/decisions/:id/permit: a fresh permit token for a pending allow or
   * review decision (an approved one included) until it expires. 409
   * decision.awaiting_approval before approval; 409 decision.not_pending when
   * denied, rejected or confirmed; 410 decision.expired.
   */
  async permit(principal: Principal, id: string): Promise<string | null> {
    const row = await this.deps.decisions.get(principal, id);
    if (row.status === 'awaiting_approval') {
      throw new DecisionAwaitingApprovalError(
        `decision ${id} awaits approval until ${row.approval_expires_at?.toISOString()}; wait with GET /v1/decisions/${id}?wait=60`,
      );
    }
    if (row.status !== 'pending')
      throw new DecisionNotPendingError(
        `decision ${id} is ${row.status}${row.effect === 'deny' ? ` (${row.reason})` : ''}: it has no permit`,
      );
    if (isPastExpiry(row, this.deps.clock.now()))
      throw new DecisionExpiredError(`decision ${id} expired at ${row.expires_at.toISOString()}`);
    return this.deps.permits.issue(row);
  }
}
