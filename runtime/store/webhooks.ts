/** Webhook endpoints, deliveries and attempts (migrations/004_webhooks.sql). */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

export interface EndpointRow {
  account_id: string;
  environment: Environment;
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  /** Deliveries also carry the Standard Webhooks headers (migrations/010_standard_webhooks.sql). */
  standard_webhooks: boolean;
  secret: string;
  secret_encrypted: boolean;
  created_at: Date;
  updated_at: Date;
}

const ENDPOINT = (sql: SqlOrTx) =>
  sql`account_id, environment, id, url, events, description, status, standard_webhooks, secret, secret_encrypted, created_at, updated_at`;

export async function insertEndpoint(sql: SqlOrTx, row: EndpointRow): Promise<void> {
  await sql`insert into webhook_endpoints ${sql(row as never, 'account_id', 'environment', 'id', 'url', 'events', 'description', 'status', 'standard_webhooks', 'secret', 'secret_encrypted', 'created_at', 'updated_at')}`;
}

export async function findEndpoint(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow[]>`select ${ENDPOINT(sql)} from webhook_endpoints
    where account_id = ${accountId} and environment = ${environment} and id = ${id}`;
  return row;
}

export function listEndpoints(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
): Promise<Page<EndpointRow>> {
  return pageQuery(
    page,
    (cursor, limit) => sql<Array<EndpointRow & { seq: number }>>`
    select ${ENDPOINT(sql)}, seq from webhook_endpoints
    where account_id = ${accountId} and environment = ${environment}
      ${cursor === null ? sql`` : sql`and seq < (select seq from webhook_endpoints where account_id = ${accountId} and environment = ${environment} and id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from webhook_endpoints where account_id = ${accountId} and environment = ${environment} and id = ${cursor}`,
      ),
  );
}

export type EndpointChange = Partial<
  Pick<EndpointRow, 'url' | 'events' | 'description' | 'status' | 'standard_webhooks'>
>;

export async function updateEndpoint(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
  change: EndpointChange,
  at: Date,
): Promise<EndpointRow | undefined> {
  const values = { ...change, updated_at: at };
  const [row] = await sql<
    EndpointRow[]
  >`update webhook_endpoints set ${sql(values as never, Object.keys(values) as never)}
    where account_id = ${accountId} and environment = ${environment} and id = ${id}
    returning ${ENDPOINT(sql)}`;
  return row;
}

/** Deletes the endpoint with its deliveries and attempts; false when there was none. */
export async function deleteEndpoint(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<boolean> {
  const rows =
    await sql`delete from webhook_endpoints where account_id = ${accountId} and environment = ${environment} and id = ${id} returning id`;
  return rows.length > 0;
}

/** A delivery claimed for one attempt, with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  /** This attempt's number (1 = first). */
  attempt: number;
  account_id: string;
  environment: Environment;
  endpoint_id: string;
  url: string;
  secret: string;
  secret_encrypted: boolean;
  standard_webhooks: boolean;
  event_id: string;
  event_type: string;
  event_created_at: Date;
  /** Null for a decision event that names its decision (migrations 017, 025): `decision_id`. */
  event_data: Record<string, unknown> | null;
  decision_id: string | null;
}

/**
 * Claims up to `limit` due deliveries (at most `perEndpoint` of one endpoint,
 * none of `busyEndpoints`) for `leaseSeconds` of real time. FOR UPDATE SKIP
 * LOCKED: concurrent dispatchers in any process claim disjoint rows, and a claim
 * moves the attempt counter, so an attempt is sent by one dispatcher only (again
 * only if its lease runs out: at least once).
 */
export function claimDueDeliveries(
  sql: SqlOrTx,
  nowMs: number,
  limit: number,
  perEndpoint: number,
  busyEndpoints: readonly string[],
  leaseSeconds = 60,
): Promise<ClaimedDelivery[]> {
  return sql<ClaimedDelivery[]>`
    with locked as (
      select d.id, d.endpoint_id, d.next_attempt_at from webhook_deliveries d
      where d.status = 'pending' and d.next_attempt_at <= to_timestamp(${nowMs}::float8 / 1000)
        and (d.locked_until is null or d.locked_until < clock_timestamp())
        and not (d.endpoint_id = any (${sql.array(busyEndpoints as string[])}::text[]))
      order by d.next_attempt_at
      -- Lock no more than twice what one endpoint may take: rows locked and not taken are skipped by the other
      -- dispatchers until this statement ends, so locking every due row would starve them on one busy endpoint.
      limit ${Math.min(limit, 2 * perEndpoint)}
      for update skip locked
    ), picked as (
      select id from (
        select id, row_number() over (partition by endpoint_id order by next_attempt_at) as rn from locked
      ) ranked where rn <= ${perEndpoint}
    ), claimed as (
      update webhook_deliveries d
      set locked_until = clock_timestamp() + make_interval(secs => ${leaseSeconds}), attempts = d.attempts + 1
      from picked where d.id = picked.id
      returning d.id, d.attempts, d.account_id, d.environment, d.endpoint_id, d.event_id
    )
    select c.id, c.attempts as attempt, c.account_id, c.environment, c.endpoint_id, w.url, w.secret, w.secret_encrypted, w.standard_webhooks,
      c.event_id, e.type as event_type, e.created_at as event_created_at, e.data as event_data, e.decision_id
    from claimed c
    join webhook_endpoints w on w.account_id = c.account_id and w.environment = c.environment and w.id = c.endpoint_id
    join events e on e.id = c.event_id`;
}

export interface AttemptResult {
  delivery_id: string;
  attempt: number;
  started_at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  ok: boolean;
  /** When the next attempt is due; null after a success or the last attempt (then abandoned). */
  next_attempt_at: Date | null;
}

/** Records attempts and moves their deliveries on, in one statement for the batch. */
export async function recordAttempts(sql: SqlOrTx, results: readonly AttemptResult[]): Promise<void> {
  await sql`
    with r as (
      select * from jsonb_to_recordset(${sql.json(results as never)}::jsonb)
        as x(delivery_id text, attempt int, started_at timestamptz, status_code int, error text, duration_ms int, ok boolean,
             next_attempt_at timestamptz)
    ), attempts as (
      insert into webhook_attempts (delivery_id, attempt, started_at, status_code, error, duration_ms, next_attempt_at)
      select delivery_id, attempt, started_at, status_code, error, duration_ms, next_attempt_at from r
      where exists (select 1 from webhook_deliveries d where d.id = r.delivery_id)
      on conflict do nothing
    )
    update webhook_deliveries d
    set status = case when r.ok then 'succeeded' when r.next_attempt_at is null then 'abandoned' else 'pending' end,
        next_attempt_at = r.next_attempt_at, locked_until = null
    from r where d.id = r.delivery_id and d.attempts = r.attempt`;
}

export interface AttemptRow {
  attempt: number;
  started_at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  next_attempt_at: Date | null;
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'abandoned';
  attempts: number;
  next_attempt_at: Date | null;
  replay_of: string | null;
  created_at: Date;
  attempt_list: AttemptRow[];
}

const DELIVERY = (
  sql: SqlOrTx,
) => sql`d.id, d.endpoint_id, d.event_id, e.type as event_type, d.status, d.attempts, d.next_attempt_at,
  d.replay_of, d.created_at,
  coalesce((select jsonb_agg(jsonb_build_object('attempt', a.attempt, 'started_at', a.started_at, 'status_code', a.status_code,
      'error', a.error, 'duration_ms', a.duration_ms, 'next_attempt_at', a.next_attempt_at) order by a.attempt)
    from webhook_attempts a where a.delivery_id = d.id), '[]') as attempt_list`;

export function listDeliveries(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  endpointId: string,
  page: PageParams,
): Promise<Page<DeliveryRow>> {
  return pageQuery(
    page,
    (cursor, limit) => sql<Array<DeliveryRow & { seq: number }>>`
    select ${DELIVERY(sql)}, d.seq from webhook_deliveries d join events e on e.id = d.event_id
    where d.account_id = ${accountId} and d.environment = ${environment} and d.endpoint_id = ${endpointId}
      ${cursor === null ? sql`` : sql`and d.seq < (select seq from webhook_deliveries where id = ${cursor} and account_id = ${accountId} and environment = ${environment})`}
    order by d.seq desc limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from webhook_deliveries where account_id = ${accountId} and environment = ${environment} and id = ${cursor}`,
      ),
  );
}

export async function findDelivery(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  endpointId: string,
  id: string,
): Promise<DeliveryRow | undefined> {
  const [row] = await sql<DeliveryRow[]>`
    select ${DELIVERY(sql)} from webhook_deliveries d join events e on e.id = d.event_id
    where d.account_id = ${accountId} and d.environment = ${environment} and d.endpoint_id = ${endpointId} and d.id = ${id}`;
  return row;
}

/** A new delivery of the same event to the same endpoint, due now. */
export async function insertReplay(
  sql: SqlOrTx,
  original: { id: string; account_id: string; environment: Environment; endpoint_id: string; event_id: string },
  newId: string,
  at: Date,
): Promise<void> {
  await sql`insert into webhook_deliveries (id, account_id, environment, endpoint_id, event_id, status, next_attempt_at, replay_of, created_at)
    values (${newId}, ${original.account_id}, ${original.environment}, ${original.endpoint_id}, ${original.event_id}, 'pending', ${at}, ${original.id}, ${at})`;
}

/** Gives claimed, unsent attempts back (a stopping dispatcher): due again at once, for any process. */
export async function releaseClaims(
  sql: SqlOrTx,
  claims: ReadonlyArray<{ id: string; attempt: number }>,
): Promise<void> {
  if (claims.length === 0) return;
  await sql`
    update webhook_deliveries d set locked_until = null, attempts = d.attempts - 1
    from jsonb_to_recordset(${sql.json(claims as never)}::jsonb) as c(id text, attempt int)
    where d.id = c.id and d.attempts = c.attempt and d.status = 'pending'`;
}
