/**
 * What a review changes, written with the decision locked (docs/reviews.md#the-rules):
 *
 * - a verdict on a review decision that did not wait: its review, nothing else;
 * - approve, on a decision awaiting approval: status pending, `expires_at` = now
 *   + `ttl_seconds` (its fiat holds last as long), and the `calls` budgets it
 *   deferred consumed now (none left: deny `budget.exceeded`, holds released);
 * - deny, or no verdict by `approval_expires_at` (the timeout): effect deny,
 *   status denied, reason `review.denied` / `review.timeout`, holds released,
 *   no call consumed.
 *
 * Each change stores `decision.reviewed` and sends `NOTIFY authz_reviews` in the
 * same transaction; after commit this process wakes its own waiters at once
 * (other processes: background/reviews.ts). Timeouts are made on the
 * service clock: lazily when a decision or a list is read, and by the sweep.
 */
import type { Policy } from '../../compiler/index.js';
import type { Clock } from '../clock.js';
import type { ApiError } from '../errors/api-error.js';
import { reviewedEvent } from '../events/build.js';
import { CHANNELS, notify, reviewPayload } from '../store/channels.js';
import type { Sql, Tx } from '../store/connect.js';
import type { DecisionRow } from '../store/decisions.js';
import { insertEvents } from '../store/events.js';
import type { BudgetUsage } from '../store/limits.js';
import { extendHolds, lockDecision, overdueApprovals, writeReview } from '../store/reviews.js';
import { removeDecisionLabels } from '../store/sessions.js';
import type { Principal, Tenant } from '../tenant.js';
import type { ApprovalTimeouts, DecisionLimits } from './decision-ports.js';
import { isOverdue } from './decision-state.js';
import type { PolicySets } from './policy-sets.js';
import { MAX_SESSION_LABELS, type SessionService } from './session-labels.js';
import { waiterKey, type ReviewWaiters } from './review-waiters.js';

export interface VerdictInput {
  verdict: 'approve' | 'deny';
  reviewer: string;
  note: string | null;
  /** The API key that reviews. */
  keyId: string;
}

export interface ApprovalsDeps {
  sql: Sql;
  clock: Clock;
  limits: DecisionLimits;
  policySets: PolicySets;
  waiters: ReviewWaiters;
  /** The approved policy's labels join the session (absent: none). */
  sessions?: SessionService;
}

/** What one transaction changed, for after its commit. */
interface Settled {
  row: DecisionRow;
  usage: BudgetUsage[];
}

/** Overdue approvals settled per round of the sweep. */
const SWEEP_BATCH = 200;

export class ApprovalService implements ApprovalTimeouts {
  constructor(private readonly deps: ApprovalsDeps) {}

  /**
   * A reviewer's verdict. `refuse(row)` answers the error to refuse it with
   * (not reviewable, self review, already reviewed), seen after an overdue
   * approval has timed out (that timeout is kept even when the verdict is
   * refused). Undefined when there is no such decision.
   *
   * @example
   * const row = await approvals.review(principal, 'dec_...', { verdict: 'approve', reviewer: 'alice', note: null, keyId: principal.keyId }, () => null);
   */
  async review(
    principal: Principal,
    id: string,
    input: VerdictInput,
    refuse: (row: DecisionRow) => ApiError | null,
  ): Promise<DecisionRow | undefined> {
    const atMs = this.deps.clock.now();
    const done = await this.deps.sql.begin(async (tx) => {
      let row = await lockDecision(tx, principal, id);
      if (!row) return undefined;
      const settled: Settled[] = [];
      if (isOverdue(row, atMs)) {
        const timedOut = await this.timeOutLocked(tx, principal, row, atMs);
        settled.push(timedOut);
        row = timedOut.row;
      }
      const problem = refuse(row);
      if (!problem) settled.push(await this.applyVerdict(tx, principal, row, input, atMs));
      return { row: settled.at(-1)?.row ?? row, settled, problem };
    });
    if (!done) return undefined;
    for (const s of done.settled) this.after(principal, s);
    if (done.problem) throw done.problem;
    return done.row;
  }

  /** The decision after its approval timed out (lazily, when read); undefined when it was settled meanwhile or does not exist. */
  async timeOut(t: Tenant, id: string): Promise<DecisionRow | undefined> {
    const atMs = this.deps.clock.now();
    const done = await this.deps.sql.begin(async (tx) => {
      const row = await lockDecision(tx, t, id);
      return row && isOverdue(row, atMs) ? this.timeOutLocked(tx, t, row, atMs) : undefined;
    });
    if (done) this.after(t, done);
    return done?.row;
  }

  /** Every overdue approval of the environment, or of every environment (the sweep); answers how many timed out. */
  async timeOutOverdue(t?: Tenant): Promise<number> {
    let n = 0;
    for (;;) {
      const due = await overdueApprovals(this.deps.sql, this.deps.clock.now(), SWEEP_BATCH, t);
      for (const d of due) if (await this.timeOut(d, d.id)) n++;
      if (due.length < SWEEP_BATCH) return n;
    }
  }

  private async timeOutLocked(tx: Tx, t: Tenant, row: DecisionRow, atMs: number): Promise<Settled> {
    const usage = await this.deps.limits.resolveHolds(tx, asPrincipal(t), row.id, false, null);
    const next: DecisionRow = {
      ...row,
      effect: 'deny',
      reason: 'review.timeout',
      status: 'denied',
      review_status: 'denied',
      reviewed_at: row.approval_expires_at,
    };
    return { row: await this.store(tx, next, atMs), usage };
  }

  private async applyVerdict(
    tx: Tx,
    principal: Principal,
    row: DecisionRow,
    input: VerdictInput,
    atMs: number,
  ): Promise<Settled> {
    const reviewed: DecisionRow = {
      ...row,
      review_status: input.verdict === 'approve' ? 'approved' : 'denied',
      reviewer: input.reviewer,
      review_note: input.note,
      reviewed_at: new Date(atMs),
      reviewer_key_id: input.keyId,
    };
    // A review after the fact records the human's judgement and changes nothing else.
    if (row.status !== 'awaiting_approval') return { row: await this.store(tx, reviewed, atMs), usage: [] };
    const { limits } = this.deps;
    if (input.verdict === 'deny') {
      const usage = await limits.resolveHolds(tx, principal, row.id, false, null);
      return {
        row: await this.store(tx, { ...reviewed, effect: 'deny', reason: 'review.denied', status: 'denied' }, atMs),
        usage,
      };
    }
    // Approved: the policy's labels join the session (a full session: denied), and the calls deferred at decision time are consumed now.
    const matched = await this.matchedPolicies(principal, row);
    const labelled = await this.addLabels(tx, principal, row, matched, atMs);
    if (labelled === 'full') {
      const released = await limits.resolveHolds(tx, principal, row.id, false, null);
      return {
        row: await this.store(
          tx,
          { ...reviewed, effect: 'deny', reason: 'session.too_many_labels', status: 'denied' },
          atMs,
        ),
        usage: released,
      };
    }
    const subject = { agentId: row.agent_id, sessionId: row.session_id, onBehalfOf: row.on_behalf_of };
    const { verdict, usage } = await limits.applyDeferredCalls(tx, principal, subject, matched, atMs);
    if (verdict && 'deny' in verdict) {
      if (labelled === 'added') await removeDecisionLabels(tx, principal, row.session_id!, row.id);
      const released = await limits.resolveHolds(tx, principal, row.id, false, null);
      const denied: DecisionRow = {
        ...reviewed,
        effect: 'deny',
        reason: verdict.deny,
        policy_id: verdict.policy_id,
        status: 'denied',
      };
      return { row: await this.store(tx, denied, atMs), usage: [...usage, ...released] };
    }
    const expiresAt = new Date(atMs + row.ttl_seconds * 1000);
    await extendHolds(tx, principal, row.id, expiresAt);
    return { row: await this.store(tx, { ...reviewed, status: 'pending', expires_at: expiresAt }, atMs), usage };
  }

  /** The approved policy's labels, added to the decision's session within the cap (locked until the transaction ends). */
  private async addLabels(
    tx: Tx,
    t: Tenant,
    row: DecisionRow,
    matched: readonly Policy[],
    atMs: number,
  ): Promise<'none' | 'added' | 'full'> {
    const labels = matched.find((p) => p.id === row.policy_id)?.labels ?? [];
    const sessions = this.deps.sessions;
    if (!sessions || row.session_id === null || labels.length === 0) return 'none';
    const extra = {
      source: 'policy' as const,
      decision_id: row.id,
      detail: null,
      agent_id: row.agent_id,
      cap: MAX_SESSION_LABELS,
    };
    return (await sessions.addInTx(tx, t, row.session_id, labels, extra, new Date(atMs))) === 'full' ? 'full' : 'added';
  }

  /** The decision's matched policies that still exist and are enabled (their budgets apply on approval). */
  private async matchedPolicies(t: Tenant, row: DecisionRow) {
    const set = await this.deps.policySets.get(t.accountId, t.environment);
    return row.matched_policy_ids.flatMap((id) => {
      const policy = set.table.byId.get(id)?.policy;
      return policy && policy.state === 'enabled' ? [policy] : [];
    });
  }

  /** The row, its decision.reviewed event and the notification, in the transaction. */
  private async store(tx: Tx, next: DecisionRow, atMs: number): Promise<DecisionRow> {
    const stored = await writeReview(tx, next);
    await insertEvents(tx, [reviewedEvent(stored, atMs)]);
    await notify(
      tx,
      CHANNELS.reviews,
      reviewPayload({ accountId: stored.account_id, environment: stored.environment, decisionId: stored.id }),
    );
    return stored;
  }

  /** After commit: this process's budget index and waiters. */
  private after(t: Tenant, settled: Settled): void {
    if (settled.usage.length > 0) this.deps.limits.note(asPrincipal(t), settled.usage);
    this.deps.waiters.wake(
      waiterKey({ accountId: t.accountId, environment: t.environment, decisionId: settled.row.id }),
    );
  }
}

/** The limits port takes a principal; only its tenant is read for holds and the budget index. */
function asPrincipal(t: Tenant): Principal {
  return { keyId: '', scopes: [], accountId: t.accountId, environment: t.environment };
}
