/**
 * Access requests (docs/api.md#access-requests-for-approvals; the AuthZEN Access
 * Request and Approval profile, draft) over the human review queue. A review
 * that needs approval answers AuthZEN `decision: false`, a requestable denial
 * naming its decision (`evaluation_id`); the gateway submits an access request
 * for it (the task is the decision itself: its id is the task's), polls the
 * task, and once a reviewer approved the decision (POST /v1/decisions/:id/review,
 * domain/approvals.ts) re-evaluates with the approval at `context.approval`:
 * the approved decision then answers, confirmed by that first use, with its
 * permit. Nothing here decides or reviews: DecisionService and ApprovalService do.
 */
import type { Clock } from '../clock.js';
import type { AuthzenAccessRequest } from '../../clients/typescript/wire.js';
import {
  ApiError,
  DecisionExpiredError,
  DecisionNotFoundError,
  DecisionNotReviewableError,
} from '../errors/api-error.js';
import type { Sql } from '../store/connect.js';
import { findDecision, type DecisionRow } from '../store/decisions.js';
import { redactContext, type RedactionPath } from '../shared/redact.js';
import { recordAccessRequest } from '../store/reviews.js';
import type { Principal } from '../tenant.js';
import type { PermitIssuer } from './decision-ports.js';
import { isApprovalDeadlinePassed, isLive } from './decision-state.js';
import type { DecisionInput, DecisionService } from './decisions.js';
import { whyDecisionNotStanding } from './permits.js';
import type { PolicySets } from './policy-sets.js';

type Json = Record<string, unknown>;

export interface AccessRequestDeps {
  sql: Sql;
  clock: Clock;
  decisions: Pick<DecisionService, 'get' | 'resolve'>;
  permits: PermitIssuer;
  /** The policies, to check that the approved decision's policy still stands before its approval is used. */
  policySets: Pick<PolicySets, 'get'>;
  /** Context paths never stored (AUTHZ_REDACT_CONTEXT): left out of the request's context too. */
  redact?: readonly RedactionPath[];
}

/** The body of POST /access/v1/requests (generated from schemas/api/authzen-access-request.schema.json; other members are ignored). */
export type AccessRequestBody = AuthzenAccessRequest;

/** What `context.approval` of a re-evaluation names: the approval's id, or null when it is not an approval object. */
export function approvalId(context: Json | null | undefined): string | null {
  const approval = context?.approval;
  if (typeof approval !== 'object' || approval === null || Array.isArray(approval)) return null;
  const id = (approval as Json).id;
  return typeof id === 'string' && id !== '' ? id : null;
}

export class AccessRequestService {
  constructor(private readonly deps: AccessRequestDeps) {}

  /**
   * POST /access/v1/requests: records the request's `context` on the decision
   * named by `denial.evaluation_id` (the key's own decisions only: another
   * key's is 404 decision.not_found) and answers it with `created` false for a
   * repeat (the same task). 409 decision.not_reviewable for a decision that
   * never awaited approval; 410 decision.expired after its approval deadline
   * (the service clock: the body's `expires_at` is not trusted).
   *
   * @example
   * const { row, created } = await requests.submit(principal, { denial: { evaluation_id: 'dec_...' }, context: { why: 'month end' } });
   */
  async submit(principal: Principal, body: AccessRequestBody): Promise<{ row: DecisionRow; created: boolean }> {
    const id = body.denial.evaluation_id;
    const row = await this.deps.decisions.get(principal, id);
    if (row.key_id !== principal.keyId) throw new DecisionNotFoundError(`no decision ${id} made by this API key`);
    if (row.approval_expires_at === null) {
      throw new DecisionNotReviewableError(
        `decision ${id} never awaited approval (${row.effect}, ${row.reason}): only a requestable denial (context.reason approval_required) takes an access request`,
      );
    }
    if (row.review_request_context !== null && row.review_request_context !== undefined) return { row, created: false };
    if (isApprovalDeadlinePassed(row, this.deps.clock.now())) {
      throw new DecisionExpiredError(
        `the approval deadline of decision ${id} passed at ${row.approval_expires_at.toISOString()}: evaluate again for a new one`,
      );
    }
    const context = redactContext(body.context ?? {}, this.deps.redact ?? []) ?? {};
    const recorded = await recordAccessRequest(this.deps.sql, principal, id, context);
    // Another request for it was recorded meanwhile: this one is its repeat.
    if (!recorded) return { row: await this.deps.decisions.get(principal, id), created: false };
    return { row: recorded, created: true };
  }

  /**
   * GET /access/v1/requests/:id: the decision an access request was submitted
   * for, as it is now (an approval whose time is up timed out first), for any
   * key of its account and environment. 404 decision.not_found when there is
   * no such decision or no access request was submitted for it.
   */
  async status(principal: Principal, id: string): Promise<DecisionRow> {
    const row = await this.deps.decisions.get(principal, id);
    if (row.review_request_context === null || row.review_request_context === undefined)
      throw new DecisionNotFoundError(`no access request for decision ${id}`);
    return row;
  }

  /**
   * A re-evaluation's approval: when `context.approval.id` names an approved
   * decision of the key's account and environment, for the same agent, action,
   * resource and amount, before its `expires_at` (the approval's
   * `approved_until`) and not used yet, and what it stood on still holds (its
   * agent not revoked since, its policy still there and enabled: what permit
   * verification checks), that decision is confirmed (this first use) and
   * answered with a fresh permit; no new decision is made. Null when the
   * approval does not apply (unknown, another request's, used, expired, its
   * agent revoked or its policy gone or disabled): the caller then decides
   * the request as any other (a revoked agent's is a deny, agent.revoked).
   *
   * @example
   * const approved = await requests.useApproval(principal, input); // null: decide(principal, input)
   */
  async useApproval(principal: Principal, input: DecisionInput): Promise<DecisionRow | null> {
    const id = approvalId(input.context);
    if (id === null) return null;
    const row = await findDecision(this.deps.sql, principal.accountId, principal.environment, id);
    if (
      !row ||
      row.review_status !== 'approved' ||
      row.approval_expires_at === null ||
      !isLive(row, this.deps.clock.now())
    )
      return null;
    const same =
      row.agent_id === input.agent_id &&
      row.action === input.action &&
      row.resource === (input.resource ?? null) &&
      row.amount === (input.amount ?? null);
    if (!same) return null;
    // An approval does not outlive a revocation or its policy (the permit would not verify either).
    if ((await whyDecisionNotStanding(this.deps, principal, row)) !== null) return null;
    let confirmed: DecisionRow;
    try {
      // One conditional update: of two uses at once, one confirms and the other is ignored.
      confirmed = await this.deps.decisions.resolve(principal, id, 'confirmed');
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) return null;
      throw error;
    }
    return { ...confirmed, permit_token: await this.deps.permits.issue(confirmed) };
  }
}
