/**
 * Reviews of decisions (migration 012): the review queue, a verdict written
 * with the decision locked, approvals that timed out, and the budget holds of a
 * decision that waited for approval.
 */
import type { Tenant } from '../tenant.js';
import type { SqlOrTx, Tx } from './connect.js';
import { COLUMNS, type DecisionRow, type ReviewStatus } from './decisions.js';
import { applyLimitBatch, type LimitOutcome, type LimitRequest } from './limits.js';
import { denyHistory } from './history.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

/** The decision, locked until the transaction ends (a verdict and a timeout never interleave). */
export async function lockDecision(tx: Tx, t: Tenant, id: string): Promise<DecisionRow | undefined> {
  const [row] = await tx<DecisionRow[]>`select ${COLUMNS(tx)} from decisions
    where account_id = ${t.accountId} and environment = ${t.environment} and id = ${id} for update`;
  return row;
}

/**
 * Writes what a verdict or a timeout changes of a locked decision: its review,
 * and for one that awaited approval its effect, reason, policy, status and
 * expiry. Returns the row as stored.
 */
export async function writeReview(tx: Tx, row: DecisionRow): Promise<DecisionRow> {
  const [stored] = await tx<DecisionRow[]>`
    update decisions set
      review_status = ${row.review_status}, reviewer = ${row.reviewer}, review_note = ${row.review_note},
      reviewed_at = ${row.reviewed_at}, reviewer_key_id = ${row.reviewer_key_id},
      effect = ${row.effect}, reason = ${row.reason}, policy_id = ${row.policy_id}, status = ${row.status},
      expires_at = ${row.expires_at},
      -- A review denied or timed out: its entry, when its row carries one (migration 029), is denied from now on.
      h_denied = case when h_scopes is not null and ${row.effect} = 'deny' then true else h_denied end
    where account_id = ${row.account_id} and environment = ${row.environment} and id = ${row.id}
    returning ${COLUMNS(tx)}`;
  // A review denied or timed out counts for history.denied from now on (docs/history.md); a gate entry is its own row.
  if (row.effect === 'deny') await denyHistory(tx, row.account_id, row.environment, row.id);
  return stored!;
}

/** An approved decision's fiat holds now last until its new expiry (the expiry sweep releases them then). */
export async function extendHolds(tx: Tx, t: Tenant, decisionId: string, expiresAt: Date): Promise<void> {
  await tx`update budget_holds set expires_at = ${expiresAt}
    where account_id = ${t.accountId} and environment = ${t.environment} and decision_id = ${decisionId} and status = 'held'`;
}

/**
 * The limits of one request inside the caller's transaction (an approval
 * consuming the calls it deferred). authz_apply_limits turns synchronous commit
 * off for the transaction it runs in; the review transaction must wait for the
 * disk like any other answer, so it is turned back on.
 */
export async function applyLimitsInTransaction(
  tx: Tx,
  request: LimitRequest,
  nowMs: number,
  rateOffsetMs: number | null,
): Promise<LimitOutcome> {
  const [outcome] = await applyLimitBatch(tx, [request], nowMs, rateOffsetMs);
  await tx`select set_config('synchronous_commit', 'on', true)`;
  return outcome!;
}

/**
 * Decisions still awaiting approval whose time is up (of one environment, or
 * of every one: the sweep), the earliest first.
 */
export function overdueApprovals(
  sql: SqlOrTx,
  nowMs: number,
  limit: number,
  t?: Tenant,
): Promise<Array<Tenant & { id: string }>> {
  return sql<Array<Tenant & { id: string }>>`
    select account_id as "accountId", environment, id from decisions
    where status = 'awaiting_approval' and approval_expires_at <= to_timestamp(${nowMs}::float8 / 1000)
      ${t === undefined ? sql`` : sql`and account_id = ${t.accountId} and environment = ${t.environment}`}
    order by approval_expires_at limit ${limit}`;
}

/**
 * GET /v1/reviews: review decisions with this review status. Open ones oldest
 * first (the queue), approved and denied ones newest first.
 */
export function listReviews(
  sql: SqlOrTx,
  t: Tenant,
  status: ReviewStatus,
  page: PageParams,
): Promise<Page<DecisionRow>> {
  const { accountId, environment } = t;
  const oldestFirst = status === 'open';
  const cursorSeq = (cursor: string) =>
    sql`(select seq from decisions where account_id = ${accountId} and environment = ${environment} and id = ${cursor})`;
  return pageQuery(
    page,
    (cursor, limit) => sql<Array<DecisionRow & { seq: number }>>`
    select ${COLUMNS(sql)}, seq from decisions
    where account_id = ${accountId} and environment = ${environment} and review_status = ${status}
      ${cursor === null ? sql`` : oldestFirst ? sql`and seq > ${cursorSeq(cursor)}` : sql`and seq < ${cursorSeq(cursor)}`}
    order by seq ${oldestFirst ? sql`asc` : sql`desc`} limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from decisions where account_id = ${accountId} and environment = ${environment} and id = ${cursor} and review_status = ${status}`,
      ),
  );
}

/**
 * Records the access request of a decision (POST /access/v1/requests): its
 * context, once. Undefined when one was already recorded (a repeat) or there
 * is no such decision; the caller reads the decision to say which.
 */
export async function recordAccessRequest(
  sql: SqlOrTx,
  t: Tenant,
  id: string,
  context: Record<string, unknown>,
): Promise<DecisionRow | undefined> {
  const [row] = await sql<DecisionRow[]>`
    update decisions set review_request_context = ${sql.json(context as never)}
    where account_id = ${t.accountId} and environment = ${t.environment} and id = ${id} and review_request_context is null
    returning ${COLUMNS(sql)}`;
  return row;
}
