/**
 * Sessions and their labels (migration 022): adding labels (authz_session_add,
 * which opens, ends and caps), reading a session for a decision or for
 * GET /v1/sessions/:session_id, and removing sessions that have ended.
 *
 * A session has ended when neither a label (`seen_at`) nor a decision of it
 * (decisions_by_session) is more recent than the idle time: readers treat it
 * as absent at once, the sweep deletes it later.
 */
import type { Tenant } from '../tenant.js';
import type { SqlOrTx } from './connect.js';

export type LabelSource = 'policy' | 'api' | 'gateway';

export interface SessionLabelRow {
  label: string;
  added_at: Date;
  source: LabelSource;
  decision_id: string | null;
  detail: string | null;
}

export interface SessionRow {
  session_id: string;
  started_at: Date;
  labels: SessionLabelRow[];
  /** Decisions of this session since it started. */
  decisions: number;
  last_decision_at: Date | null;
}

/** One call of authz_session_add. */
export interface SessionAdd {
  account_id: string;
  environment: string;
  session_id: string;
  /** Empty: only opens the session (its first decision in a process). */
  labels: readonly string[];
  source: LabelSource;
  decision_id: string | null;
  detail: string | null;
  agent_id: string | null;
  now: Date;
  idle_seconds: number;
  /** Null: no cap (a decision's policy labels, checked against the cap when it was decided). */
  cap: number | null;
}

/**
 * Adds each item's labels to its session, in one statement, sessions locked in
 * key order (the caller's transaction keeps them locked until it ends). Answers
 * per item, in order: 'ok', or 'full' when nothing was added because the new
 * labels would pass the item's cap.
 *
 * @example
 * const [outcome] = await addSessionLabels(tx, [{ account_id: 'acct_1', environment: 'test', session_id: 'run-1', labels: ['private'], source: 'api', decision_id: null, detail: null, agent_id: 'bot', now: new Date(), idle_seconds: 86_400, cap: 256 }]);
 * // outcome === 'ok'
 */
export async function addSessionLabels(sql: SqlOrTx, items: readonly SessionAdd[]): Promise<Array<'ok' | 'full'>> {
  if (items.length === 0) return [];
  const rows = await sql<Array<{ ord: string; outcome: 'ok' | 'full' }>>`
    select x.ord, authz_session_add(x.account_id, x.environment, x.session_id, x.labels, x.source, x.decision_id, x.detail,
      x.agent_id, x.now, x.idle_seconds, x.cap) as outcome
    from (
      select e.ord, e.v->>'account_id' as account_id, e.v->>'environment' as environment, e.v->>'session_id' as session_id,
        array(select jsonb_array_elements_text(e.v->'labels')) as labels, e.v->>'source' as source,
        e.v->>'decision_id' as decision_id, e.v->>'detail' as detail, e.v->>'agent_id' as agent_id,
        (e.v->>'now')::timestamptz as now, (e.v->>'idle_seconds')::float8 as idle_seconds, (e.v->>'cap')::int as cap
      from jsonb_array_elements(${sql.json(items as never)}::jsonb) with ordinality as e(v, ord)
      -- One lock order for every caller: two batches adding to the same sessions cannot deadlock.
      order by account_id, environment, session_id, e.ord
      offset 0
    ) x`;
  const byOrd = new Map(rows.map((r) => [Number(r.ord), r.outcome]));
  return items.map((_, i) => byOrd.get(i + 1) ?? 'ok');
}

/**
 * The labels of a live session, in the order they were added; null when the
 * session does not exist or has ended (`nowMs - idleSeconds` is later than its
 * last label and its last decision). One round trip.
 *
 * @example
 * await sessionLabels(sql, { accountId: 'acct_1', environment: 'test' }, 'run-1', Date.now(), 86_400); // => ['private', 'untrusted']
 */
export async function sessionLabels(
  sql: SqlOrTx,
  t: Tenant,
  sessionId: string,
  nowMs: number,
  idleSeconds: number,
): Promise<string[] | null> {
  // One definition with the decision path's re-check (functions/authz_session_labels.sql).
  const [row] = await sql<Array<{ labels: string[] | null }>>`
    select authz_session_labels(${t.accountId}, ${t.environment}, ${sessionId}, ${nowMs}::float8, ${idleSeconds}::float8) as labels`;
  return row?.labels ?? null;
}

/**
 * A live session whole (GET /v1/sessions/:session_id); undefined when it does
 * not exist or has ended.
 *
 * @example
 * const session = await findSession(sql, { accountId: 'acct_1', environment: 'test' }, 'run-1', Date.now(), 86_400);
 * // session?.labels[0] => { label: 'private', source: 'api', ... }
 */
export async function findSession(
  sql: SqlOrTx,
  t: Tenant,
  sessionId: string,
  nowMs: number,
  idleSeconds: number,
): Promise<SessionRow | undefined> {
  const [row] = await sql<Array<{ live: boolean; started_at: Date }>>`
    select authz_session_labels(s.account_id, s.environment, s.session_id, ${nowMs}::float8, ${idleSeconds}::float8) is not null as live, s.started_at from sessions s
    where s.account_id = ${t.accountId} and s.environment = ${t.environment} and s.session_id = ${sessionId}`;
  if (!row?.live) return undefined;
  const [labels, [counted]] = await Promise.all([
    sql<SessionLabelRow[]>`select label, added_at, source, decision_id, detail from session_labels
      where account_id = ${t.accountId} and environment = ${t.environment} and session_id = ${sessionId}
      order by added_at, label`,
    sql<Array<{ decisions: string; last_decision_at: Date | null }>>`
      select count(*) as decisions, max(evaluated_at) as last_decision_at from decisions
      where account_id = ${t.accountId} and environment = ${t.environment} and session_id = ${sessionId} and evaluated_at >= ${row.started_at}`,
  ]);
  return {
    session_id: sessionId,
    started_at: row.started_at,
    labels,
    decisions: Number(counted!.decisions),
    last_decision_at: counted!.last_decision_at,
  };
}

/**
 * The idle sweep: deletes (labels and all) up to `limit` sessions that have
 * ended, oldest first; answers how many.
 *
 * @example
 * await deleteEndedSessions(sql, Date.now(), 86_400, 500); // => 3
 */
export async function deleteEndedSessions(
  sql: SqlOrTx,
  nowMs: number,
  idleSeconds: number,
  limit: number,
): Promise<number> {
  const cut = new Date(nowMs - idleSeconds * 1000);
  const rows = await sql`
    delete from sessions d using (
      select s.account_id, s.environment, s.session_id from sessions s
      where s.seen_at < ${cut}
        and not authz_session_live(s.account_id, s.environment, s.session_id, s.seen_at, ${cut})
      order by s.seen_at limit ${limit}
      for update of s skip locked
    ) e
    where d.account_id = e.account_id and d.environment = e.environment and d.session_id = e.session_id
    returning 1`;
  return rows.length;
}

/**
 * Takes back the labels one decision's policy added (inside the transaction that
 * added them: an approval that a budget then denies).
 *
 * @example
 * await removeDecisionLabels(tx, { accountId: 'acct_1', environment: 'test' }, 'run-1', 'dec_...');
 */
export async function removeDecisionLabels(
  sql: SqlOrTx,
  t: Tenant,
  sessionId: string,
  decisionId: string,
): Promise<void> {
  await sql`delete from session_labels
    where account_id = ${t.accountId} and environment = ${t.environment} and session_id = ${sessionId}
      and decision_id = ${decisionId} and source = 'policy'`;
}
