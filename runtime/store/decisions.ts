/** Decisions: written in batches (group commit), read and resolved one by one. */
import type { Environment, Tenant } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import type { EventRow } from './events.js';
import type { HistoryReading, HistoryRecord } from './history.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

export type DecisionStatus = 'pending' | 'confirmed' | 'rejected' | 'denied' | 'awaiting_approval';
export type DecisionEffect = 'allow' | 'deny' | 'review';
/** A review decision's review (migration 012): open until a reviewer (or the approval timeout) answers. */
export type ReviewStatus = 'open' | 'approved' | 'denied';

/** An entry of a decision's `warnings` column (policy.conflict, budget.below_threshold, environment.no_policies), as the decision answers it. */
export interface WarningRow {
  code: string;
  message: string;
  policy_ids: string[];
}

export interface DecisionRow {
  account_id: string;
  environment: Environment;
  id: string;
  agent_id: string;
  action: string;
  resource: string | null;
  amount: number | null;
  context: Record<string, unknown> | null;
  effect: DecisionEffect;
  reason: string;
  policy_id: string | null;
  matched_policy_ids: string[];
  warnings: WarningRow[];
  status: DecisionStatus;
  evaluated_at: Date;
  expires_at: Date;
  ttl_seconds: number;
  permit_token: string | null;
  resolved_at: Date | null;
  confirmed_amount: number | null;
  session_id: string | null;
  on_behalf_of: string | null;
  args_digest: string | null;
  /** The API key that asked. */
  key_id: string | null;
  /** The outcome with the shadow policies enabled, when it differs in effect or reason. */
  shadow: { effect: DecisionEffect; reason: string; policy_id: string | null } | null;
  /** Set on decisions a review policy decided (null on allow and deny). */
  review_status: ReviewStatus | null;
  reviewer: string | null;
  review_note: string | null;
  reviewed_at: Date | null;
  /** The API key that reviewed (kept for audit; not answered). */
  reviewer_key_id: string | null;
  /** Set when the decision waits for approval (status awaiting_approval) or did. */
  approval_expires_at: Date | null;
  /**
   * The `context` of the access request submitted for it (POST /access/v1/requests,
   * migration 020; `{}` for one without): null until one is. Read with every row;
   * rows made in memory may leave it out.
   */
  review_request_context?: Record<string, unknown> | null;
  /**
   * The session's labels it was decided with (migration 022): null when none of
   * its candidate policies reads or adds labels. Rows made in memory may leave it out.
   */
  session_labels?: string[] | null;
  /**
   * What the MCP gateway read in the result of the request it allowed
   * (POST /v1/decisions/:id/output, migration 023): null until recorded. Read
   * with every row; rows made in memory may leave it out.
   */
  output?: DecisionOutputRow | null;
  /** The history values its candidate policies read (metadata.history, migration 021); null or absent when none. */
  history?: HistoryReading[] | null;
}

/** One detector rule's findings in a result, and what the gateway did with them. */
export interface OutputFindingRow {
  kind: string;
  rule: string;
  count: number;
  action: 'label' | 'redact' | 'block' | 'skipped';
}

/** A decision's `output` column: the labels and findings of its request's result, never the matched text. */
export interface DecisionOutputRow {
  labels: string[];
  findings: OutputFindingRow[];
  /** ISO 8601, the service clock's. */
  recorded_at: string;
}

export interface NewAgent {
  account_id: string;
  environment: Environment;
  agent_id: string;
  first_seen_at: Date;
}

/**
 * A decision row with its history entry's columns (migration 029): its scopes, whether it is denied, its MATCH
 * values and how long it is kept. The rest of the entry is the decision's own (agent, session, user, action,
 * amount, evaluated_at: runtime/history/plan.ts makes the entry from the same request and clock reading).
 */
const withEntry = (d: DecisionRow, e: HistoryRecord) => ({
  ...d,
  h_scopes: e.scopes,
  h_denied: e.kind === 'denied' ? true : null,
  h_match: Object.keys(e.match_values).length === 0 ? null : e.match_values,
  h_keep_s: (e.keep_until_ms - e.evaluated_at_ms) / 1000,
});

/**
 * Decisions decided from history leases (runtime/history/leases.ts): their
 * entries, and the leases' epochs, which must still stand when they are written
 * (functions/authz_write_leased.sql; else SQLSTATE AZL01, LEASE_ENDED, and nothing is written).
 */
export interface LeasedHistory {
  /** Each decision's entry, by position in the batch's decisions (null: it leaves none). */
  entries: ReadonlyArray<HistoryRecord | null>;
  fences: ReadonlyArray<{ lock_key: string; epoch: string }>;
  /** The fences' keys to lock: those of the decisions that leave an entry or name one in `after` (the others are only checked). */
  locked: readonly string[];
  /** Entries of other decisions these were decided from: each must be stored (by then, or by this statement). */
  after: ReadonlyArray<{ account_id: string; environment: string; decision_id: string }>;
}

/**
 * One statement (so one round trip, atomically): registers the new agents (each
 * exactly once across processes: ON CONFLICT DO NOTHING, its event only when
 * this statement inserted the row), inserts the decisions and their
 * decision.review events (bodies built: runtime/events/build.ts); the allow and
 * deny events are derived from the decisions, with a row only when subscribed
 * (functions/authz_write_decisions.sql); with `leased`, their history entries too. Permit tokens are never stored. Returns the agents this batch registered, as `account:environment:agent_id`.
 */
export async function writeDecisionBatch(
  sql: SqlOrTx,
  decisions: readonly DecisionRow[],
  decisionEvents: readonly EventRow[],
  agents: readonly NewAgent[],
  agentEvents: readonly EventRow[],
  leased: LeasedHistory | null = null,
): Promise<Set<string>> {
  // One definition of the write (functions/authz_write_decisions.sql), also used by authz_decide_batch
  // and, after the leases' check, by authz_write_leased (each entry as columns of its decision's row).
  const entries = leased?.entries;
  const written = entries ? decisions.map((d, i) => (entries[i] ? withEntry(d, entries[i]) : d)) : decisions;
  const args = sql`${sql.json(written as never)}::jsonb, ${sql.json(decisionEvents as never)}::jsonb,
      ${sql.json(agents as never)}::jsonb, ${sql.json(agentEvents as never)}::jsonb`;
  const rows = await sql<Array<{ registered: string | null }>>`
    select ${
      leased === null
        ? sql`authz_write_decisions(${args})`
        : sql`authz_write_leased(${args},
            ${[...new Set(leased.fences.map((f) => f.lock_key))]}::text[], ${[...new Set(leased.fences.map((f) => f.epoch))]}::bigint[],
            ${[...new Set(leased.locked)]}::text[], ${sql.json(leased.after as never)}::jsonb)`
    } as registered`;
  return new Set(rows.map((r) => r.registered).filter((r): r is string => r !== null));
}

/** Every column of a DecisionRow (also used by store/reviews.ts). */
export const COLUMNS = (
  sql: SqlOrTx,
) => sql`account_id, environment, id, agent_id, action, resource, amount, context, effect, reason,
  policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds, permit_token, resolved_at, confirmed_amount,
  session_id, on_behalf_of, args_digest, key_id, shadow, review_status, reviewer, review_note, reviewed_at, reviewer_key_id, approval_expires_at,
  review_request_context, session_labels, output, history`;

export async function findDecision(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<DecisionRow | undefined> {
  const [row] = await sql<DecisionRow[]>`select ${COLUMNS(sql)} from decisions
    where account_id = ${accountId} and environment = ${environment} and id = ${id}`;
  return row;
}

/**
 * The decisions named by `keys` (any accounts), in one query: the bodies of
 * decision events that name their decision (runtime/events/references.ts).
 */
export async function findDecisionsByKeys(
  sql: SqlOrTx,
  keys: ReadonlyArray<{ account_id: string; environment: Environment; id: string }>,
): Promise<DecisionRow[]> {
  if (keys.length === 0) return [];
  return sql<DecisionRow[]>`select ${COLUMNS(sql)} from decisions
    where (account_id, environment, id) in (
      select * from unnest(${keys.map((k) => k.account_id)}::text[], ${keys.map((k) => k.environment)}::text[], ${keys.map((k) => k.id)}::text[]))`;
}

/** GET /v1/decisions filters; each one given narrows the list (all of them together: AND). */
export interface DecisionFilters {
  agentId?: string;
  sessionId?: string;
  onBehalfOf?: string;
  /** Only decisions whose shadow outcome differs (true), or only those whose does not (false). */
  shadowDiverged?: boolean;
  effect?: DecisionEffect;
  reason?: string;
}

/**
 * The filters as one SQL fragment (nested fragments, values as parameters).
 * Migration 007 indexes effects other than allow and reasons other than
 * policy.matched with partial indexes; the redundant `<> 'allow'` /
 * `<> 'policy.matched'` lets the planner use them whatever the parameter's value
 * (a generic plan cannot see that `effect = $1` excludes allow).
 */
function filterClause(sql: SqlOrTx, f: DecisionFilters) {
  const agent = f.agentId === undefined ? sql`` : sql`and agent_id = ${f.agentId}`;
  const effect =
    f.effect === undefined
      ? sql``
      : sql`and effect = ${f.effect} ${f.effect === 'allow' ? sql`` : sql`and effect <> 'allow'`}`;
  const reason =
    f.reason === undefined
      ? sql``
      : sql`and reason = ${f.reason} ${f.reason === 'policy.matched' ? sql`` : sql`and reason <> 'policy.matched'`}`;
  const session = f.sessionId === undefined ? sql`` : sql`and session_id = ${f.sessionId}`;
  const user = f.onBehalfOf === undefined ? sql`` : sql`and on_behalf_of = ${f.onBehalfOf}`;
  const shadow =
    f.shadowDiverged === undefined ? sql`` : f.shadowDiverged ? sql`and shadow is not null` : sql`and shadow is null`;
  return sql`${agent} ${session} ${user} ${shadow} ${effect} ${reason}`;
}

export async function listDecisions(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
  filters: DecisionFilters = {},
): Promise<Page<DecisionRow>> {
  return pageQuery(
    page,
    (cursor, limit) => sql<Array<DecisionRow & { seq: number }>>`
    select ${COLUMNS(sql)}, seq from decisions
    where account_id = ${accountId} and environment = ${environment}
      ${filterClause(sql, filters)}
      ${cursor === null ? sql`` : sql`and seq < (select seq from decisions where account_id = ${accountId} and environment = ${environment} and id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from decisions where account_id = ${accountId} and environment = ${environment} and id = ${cursor}`,
      ),
  );
}

/**
 * Moves a pending, unexpired decision to confirmed or rejected in one conditional
 * UPDATE (so two concurrent confirms cannot both succeed). Undefined when the
 * decision was not pending or had expired; the caller reads it to say why.
 */
export async function resolveDecision(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
  to: 'confirmed' | 'rejected',
  at: Date,
  confirmedAmount: number | null,
): Promise<DecisionRow | undefined> {
  const [row] = await sql<DecisionRow[]>`
    update decisions set status = ${to}, resolved_at = ${at}, confirmed_amount = ${confirmedAmount}
    where account_id = ${accountId} and environment = ${environment} and id = ${id}
      and status = 'pending' and expires_at > ${at}
    returning ${COLUMNS(sql)}`;
  return row;
}

/**
 * Records what the gateway read in the result of the request a decision
 * allowed, once: one conditional UPDATE, so of two records at once one wins.
 * Undefined when there is no such decision or it has an output already; the
 * caller reads it to say which.
 */
export async function recordDecisionOutput(
  sql: SqlOrTx,
  t: Tenant,
  id: string,
  output: DecisionOutputRow,
): Promise<DecisionRow | undefined> {
  const [row] = await sql<DecisionRow[]>`
    update decisions set output = ${sql.json(output as never)}
    where account_id = ${t.accountId} and environment = ${t.environment} and id = ${id} and output is null
    returning ${COLUMNS(sql)}`;
  return row;
}

/** Where an export page starts: after this (evaluated_at, seq), or at the range's start. */
export interface ExportCursor {
  evaluatedAt: Date;
  seq: number;
}

/**
 * One page of decisions with `since <= evaluated_at < until`, oldest first
 * (ties by insertion order), after `cursor`: a keyset page, so reading a range
 * of any size holds one page at a time. `ids`: the same range said by id range
 * (domain/decision-id-range.ts), so only the partitions of its days are read.
 */
export async function exportDecisionPage(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  range: { since: Date; until: Date },
  cursor: ExportCursor | null,
  limit: number,
  ids: { lo: string; hi: string } | null = null,
): Promise<Array<DecisionRow & { seq: number }>> {
  const after =
    cursor === null
      ? sql`and evaluated_at >= ${range.since}`
      : sql`and (evaluated_at, seq) > (${cursor.evaluatedAt}, ${cursor.seq}) and evaluated_at >= ${range.since}`;
  return sql<Array<DecisionRow & { seq: number }>>`
    select ${COLUMNS(sql)}, seq from decisions
    where account_id = ${accountId} and environment = ${environment} and evaluated_at < ${range.until} ${after}
      ${ids ? sql`and id >= ${ids.lo} and id < ${ids.hi}` : sql``}
    order by evaluated_at, seq limit ${limit}`;
}
