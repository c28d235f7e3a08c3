/**
 * The queries bench/decision-log-indexes.ts times: every statement the decision
 * log serves, as the store modules write them (runtime/store/decisions.ts,
 * reviews.ts, sessions.ts, stats.ts, log-partitions.ts,
 * functions/authz_session_live.sql), with literal values picked from the
 * loaded log (the largest tenant, acc_bench_a / live). A list asks for its
 * page size + 1 rows (store/pagination.ts), 21 by default.
 */
import type postgres from 'postgres';
import { idRange } from '../runtime/ids.js';
import { DAY_MS, dayOf, partitionName } from '../runtime/store/log-partitions.js';
import { TENANTS } from './decision-log-indexes-load.js';

export interface BenchQuery {
  name: string;
  sql: string;
  /** A write: measured in a transaction that is rolled back. */
  write?: true;
}

/** COLUMNS of runtime/store/decisions.ts. */
const COLS = `account_id, environment, id, agent_id, action, resource, amount, context, effect, reason,
  policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds, permit_token, resolved_at, confirmed_amount,
  session_id, on_behalf_of, args_digest, key_id, shadow, review_status, reviewer, review_note, reviewed_at, reviewer_key_id, approval_expires_at,
  review_request_context, session_labels, output, history`;

const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
const ts = (ms: number) => `${lit(new Date(ms).toISOString())}::timestamptz`;

interface Filters {
  agentId?: string;
  sessionId?: string;
  onBehalfOf?: string;
  shadowDiverged?: boolean;
  effect?: string;
  reason?: string;
}

const T = TENANTS[0];
const tenant = `account_id = ${lit(T.accountId)} and environment = ${lit(T.environment)}`;

/** filterClause of runtime/store/decisions.ts. */
function filterSql(f: Filters): string {
  const parts: string[] = [];
  if (f.agentId !== undefined) parts.push(`and agent_id = ${lit(f.agentId)}`);
  if (f.sessionId !== undefined) parts.push(`and session_id = ${lit(f.sessionId)}`);
  if (f.onBehalfOf !== undefined) parts.push(`and on_behalf_of = ${lit(f.onBehalfOf)}`);
  if (f.shadowDiverged !== undefined) parts.push(f.shadowDiverged ? 'and shadow is not null' : 'and shadow is null');
  if (f.effect !== undefined)
    parts.push(`and effect = ${lit(f.effect)}${f.effect === 'allow' ? '' : ` and effect <> 'allow'`}`);
  if (f.reason !== undefined)
    parts.push(
      `and reason = ${lit(f.reason)}${f.reason === 'policy.matched' ? '' : ` and reason <> 'policy.matched'`}`,
    );
  return parts.join(' ');
}

/** listDecisions' page query. */
function listSql(f: Filters, cursor: string | null = null): string {
  const after = cursor === null ? '' : `and seq < (select seq from decisions where ${tenant} and id = ${lit(cursor)})`;
  return `select ${COLS}, seq from decisions where ${tenant} ${filterSql(f)} ${after} order by seq desc limit 21`;
}

/** exportDecisionPage. */
function exportSql(since: number, until: number, cursor: { at: number; seq: string } | null, ids: boolean): string {
  const after =
    cursor === null
      ? `and evaluated_at >= ${ts(since)}`
      : `and (evaluated_at, seq) > (${ts(cursor.at)}, ${cursor.seq}) and evaluated_at >= ${ts(since)}`;
  const r = idRange('dec', cursor?.at ?? since, until);
  return `select ${COLS}, seq from decisions where ${tenant} and evaluated_at < ${ts(until)} ${after}
    ${ids ? `and id >= ${lit(r.lo)} and id < ${lit(r.hi)}` : ''} order by evaluated_at, seq limit 1000`;
}

/** stats.ts inWindow. */
function windowSql(since: number, until: number): string {
  const r = idRange('dec', since, until);
  return `${tenant} and evaluated_at >= to_timestamp(${since}::float8 / 1000) and evaluated_at < to_timestamp(${until}::float8 / 1000)
    and id >= ${lit(r.lo)} and id < ${lit(r.hi)}`;
}

/** The first decision of the tenant at or after `ms` (optionally of one agent / with one filter). */
async function idAt(sql: postgres.Sql, ms: number, extra = ''): Promise<{ id: string; at: number; seq: string }> {
  const lo = idRange('dec', ms, ms).lo;
  const [row] = await sql.unsafe(
    `select id, evaluated_at, seq::text as seq from decisions where ${tenant} ${extra} and id >= ${lit(lo)} order by id limit 1`,
  );
  if (!row) throw new Error(`no decision at ${new Date(ms).toISOString()} ${extra}`);
  return { id: row.id as string, at: (row.evaluated_at as Date).getTime(), seq: row.seq as string };
}

/**
 * The queries, and the same reads ordered by id instead of seq / (evaluated_at, seq) (`byId`: what the list and
 * the export would be without decisions_list and decisions_by_time; ties within a millisecond would then go by the
 * ids' random part instead of insertion order).
 */
export async function benchQueries(
  sql: postgres.Sql,
  o: { endMs: number; days: number; sessions: number },
): Promise<{ queries: BenchQuery[]; byId: BenchQuery[] }> {
  const end = o.endMs;
  const agent = 'agent-1234';
  const user = 'user-777';
  const oldSession = `sess-${Math.floor((o.sessions * 2) / 3)}`;
  const newSession = `sess-${o.sessions - 2}`;
  const deep = await idAt(sql, end - 20 * DAY_MS);
  const deepAgent = await idAt(sql, end - 20 * DAY_MS, `and agent_id = ${lit(agent)}`);
  const deepDeny = await idAt(sql, end - 20 * DAY_MS, `and effect = 'deny'`);
  const deepReview = await idAt(sql, end - 20 * DAY_MS, `and review_status = 'denied'`);
  const mid = await idAt(sql, end - 15 * DAY_MS);
  const pending = await idAt(sql, end - 3_600_000, `and status = 'pending'`);
  const day = Math.floor((end - 10 * DAY_MS) / DAY_MS) * DAY_MS;
  const midDay = await idAt(sql, day + DAY_MS / 2);
  const keys = await sql.unsafe(
    `select id from decisions where ${tenant} and id >= ${lit(idRange('dec', end - 3_600_000, end).lo)} order by id limit 100`,
  );
  const keyIds = keys.map((k) => lit(k.id as string)).join(', ');
  const oldest = partitionName('decisions', dayOf(end - o.days * DAY_MS));

  const list = (name: string, f: Filters, cursor: string | null = null): BenchQuery => ({
    name: `GET /v1/decisions${name}`,
    sql: listSql(f, cursor),
  });
  const byIdList = (name: string, f: Filters, cursor: string | null = null): BenchQuery => ({
    name: `GET /v1/decisions${name}, by id`,
    sql: `select ${COLS}, seq from decisions where ${tenant} ${filterSql(f)} ${cursor === null ? '' : `and id < ${lit(cursor)}`}
      order by id desc limit 21`,
  });
  const dayIds = idRange('dec', day, day + DAY_MS);
  const byIdExport = (cursor: string | null): string =>
    `select ${COLS}, seq from decisions where ${tenant} and evaluated_at < ${ts(day + DAY_MS)} and evaluated_at >= ${ts(day)}
      and id >= ${lit(dayIds.lo)} and id < ${lit(dayIds.hi)} ${cursor === null ? '' : `and id > ${lit(cursor)}`} order by id limit 1000`;
  const byId: BenchQuery[] = [
    byIdList('', {}),
    byIdList('?effect=allow', { effect: 'allow' }),
    byIdList('?reason=policy.matched', { reason: 'policy.matched' }),
    byIdList('?shadow_diverged=false', { shadowDiverged: false }),
    byIdList('?starting_after (20 days back)', {}, deep.id),
    { name: 'export / replay: first page of a day, by id', sql: byIdExport(null) },
    { name: 'export / replay: a page mid-day (cursor), by id', sql: byIdExport(midDay.id) },
  ];
  const queries: BenchQuery[] = [
    list('', {}),
    list('?agent_id', { agentId: agent }),
    list('?effect=deny', { effect: 'deny' }),
    list('?effect=review', { effect: 'review' }),
    list('?effect=allow', { effect: 'allow' }),
    list('?reason=budget.exceeded', { reason: 'budget.exceeded' }),
    list('?reason=policy.matched', { reason: 'policy.matched' }),
    list('?session_id (10 days old)', { sessionId: oldSession }),
    list('?session_id (current)', { sessionId: newSession }),
    list('?on_behalf_of', { onBehalfOf: user }),
    list('?shadow_diverged=true', { shadowDiverged: true }),
    list('?shadow_diverged=false', { shadowDiverged: false }),
    list('?agent_id&effect=deny', { agentId: agent, effect: 'deny' }),
    list('?agent_id&on_behalf_of', { agentId: agent, onBehalfOf: user }),
    list('?effect=deny&reason=budget.exceeded', { effect: 'deny', reason: 'budget.exceeded' }),
    list('?on_behalf_of&effect=deny', { onBehalfOf: user, effect: 'deny' }),
    list('?session_id&effect=allow (current)', { sessionId: newSession, effect: 'allow' }),
    list('?agent_id&shadow_diverged=true', { agentId: agent, shadowDiverged: true }),
    list('?starting_after (20 days back)', {}, deep.id),
    list('?agent_id&starting_after (20 days back)', { agentId: agent }, deepAgent.id),
    list('?effect=deny&starting_after (20 days back)', { effect: 'deny' }, deepDeny.id),
    {
      name: 'starting_after check (cursor exists)',
      sql: `select 1 from decisions where ${tenant} and id = ${lit(deep.id)}`,
    },
    { name: 'GET /v1/decisions/:id', sql: `select ${COLS} from decisions where ${tenant} and id = ${lit(mid.id)}` },
    {
      name: 'event bodies by reference (100 decisions by key)',
      sql: `select ${COLS} from decisions where (account_id, environment, id) in (select * from unnest(
        array_fill(${lit(T.accountId)}::text, array[100]), array_fill(${lit(T.environment)}::text, array[100]), array[${keyIds}]::text[]))`,
    },
    { name: 'export / replay: first page of a day', sql: exportSql(day, day + DAY_MS, null, true) },
    {
      name: 'export / replay: a page mid-day (cursor)',
      sql: exportSql(day, day + DAY_MS, { at: midDay.at, seq: midDay.seq }, true),
    },
    { name: 'export: first page, no id range (legacy rows)', sql: exportSql(day, day + DAY_MS, null, false) },
    {
      name: 'GET /v1/stats/decisions: per minute, 1 h',
      sql: `select (floor(extract(epoch from evaluated_at) / 60) * 60000)::float8 as minute_ms, effect, count(*)::int as count
        from decisions where ${windowSql(end - 3_600_000, end)} group by 1, 2 order by 1, 2`,
    },
    {
      name: 'GET /v1/stats/decisions: per minute, 24 h',
      sql: `select (floor(extract(epoch from evaluated_at) / 60) * 60000)::float8 as minute_ms, effect, count(*)::int as count
        from decisions where ${windowSql(end - DAY_MS, end)} group by 1, 2 order by 1, 2`,
    },
    {
      name: 'GET /v1/stats/decisions: top denied agents, 24 h',
      sql: `select agent_id as key, count(*)::int as count from decisions where ${windowSql(end - DAY_MS, end)}
        and effect = 'deny' group by 1 order by 2 desc, 1 limit 10`,
    },
    {
      name: 'GET /v1/sessions/:id: decisions count (current)',
      sql: `select count(*) as decisions, max(evaluated_at) as last_decision_at from decisions
        where ${tenant} and session_id = ${lit(newSession)} and evaluated_at >= ${ts(end - 3 * 3_600_000)}`,
    },
    {
      name: 'session live? (authz_session_live: last decision)',
      sql: `select d.evaluated_at from decisions d where d.${tenant.replace(' and ', ' and d.')}
        and d.session_id = ${lit(newSession)} order by d.seq desc limit 1`,
    },
    {
      name: 'session live? (ended session, 10 days old)',
      sql: `select d.evaluated_at from decisions d where d.${tenant.replace(' and ', ' and d.')}
        and d.session_id = ${lit(oldSession)} order by d.seq desc limit 1`,
    },
    {
      name: 'GET /v1/reviews?status=open (queue, oldest first)',
      sql: `select ${COLS}, seq from decisions where ${tenant} and review_status = 'open' order by seq asc limit 21`,
    },
    {
      name: 'GET /v1/reviews?status=approved',
      sql: `select ${COLS}, seq from decisions where ${tenant} and review_status = 'approved' order by seq desc limit 21`,
    },
    {
      name: 'GET /v1/reviews?status=denied&starting_after (20 days back)',
      sql: `select ${COLS}, seq from decisions where ${tenant} and review_status = 'denied'
        and seq < (select seq from decisions where ${tenant} and id = ${lit(deepReview.id)}) order by seq desc limit 21`,
    },
    {
      name: 'approvals overdue: the sweep (all tenants)',
      sql: `select account_id, environment, id from decisions where status = 'awaiting_approval'
        and approval_expires_at <= to_timestamp(${end}::float8 / 1000) order by approval_expires_at limit 100`,
    },
    {
      name: 'approvals overdue: one tenant (before each list and export)',
      sql: `select account_id, environment, id from decisions where status = 'awaiting_approval'
        and approval_expires_at <= to_timestamp(${end}::float8 / 1000) and ${tenant} order by approval_expires_at limit 100`,
    },
    {
      name: 'retention: oldest day awaiting approval?',
      sql: `select 1 from ${oldest} where status = 'awaiting_approval' limit 1`,
    },
    { name: 'retention: oldest day pending?', sql: `select 1 from ${oldest} where status = 'pending' limit 1` },
    {
      name: 'retention: trim the default partition',
      sql: `delete from decisions_default where ctid = any (array(
        select d.ctid from decisions_default d where d.evaluated_at < ${ts(end - o.days * DAY_MS)}
          and d.status <> 'awaiting_approval' and not (d.status = 'pending' and d.expires_at > ${ts(end)})
          and not exists (select 1 from budget_holds h where h.account_id = d.account_id and h.environment = d.environment
                          and h.decision_id = d.id and h.status = 'held')
        limit 1000))`,
      write: true,
    },
    {
      name: 'POST /v1/decisions/:id/confirm (update, rolled back)',
      sql: `update decisions set status = 'confirmed', resolved_at = ${ts(pending.at + 1000)}, confirmed_amount = null
        where ${tenant} and id = ${lit(pending.id)} and status = 'pending' and expires_at > ${ts(pending.at + 1000)}
        returning ${COLS}`,
      write: true,
    },
  ];
  return { queries, byId };
}
