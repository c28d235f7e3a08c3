/** The events table: written in the same transaction as the change that caused it. */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

export interface EventRow {
  id: string;
  account_id: string;
  environment: Environment;
  type: string;
  created_at: Date;
  data: Record<string, unknown>;
}

/**
 * An event as stored: a decision.allow / decision.deny event holds no body
 * (`data` null) but names its decision (migration 017); runtime/events/references.ts
 * builds the body when the event is read.
 */
export interface StoredEventRow extends Omit<EventRow, 'data'> {
  data: Record<string, unknown> | null;
  /** Set on a decision event stored by reference (then `data` is null). */
  decision_id?: string | null;
}

/** Rows per insert: six parameters each, well under PostgreSQL's 65,535 parameters per statement. */
const INSERT_CHUNK = 5_000;

export async function insertEvents(sql: SqlOrTx, events: readonly EventRow[]): Promise<void> {
  for (let i = 0; i < events.length; i += INSERT_CHUNK) await insertChunk(sql, events.slice(i, i + INSERT_CHUNK));
}

async function insertChunk(sql: SqlOrTx, events: readonly EventRow[]): Promise<void> {
  await sql`insert into events ${sql(events.map((e) => ({ ...e, data: sql.json(e.data as never) })) as never, 'id', 'account_id', 'environment', 'type', 'created_at', 'data')}`;
}

export async function findEvent(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<StoredEventRow | undefined> {
  const [row] = await sql<StoredEventRow[]>`
    select id, account_id, environment, type, created_at, data, decision_id from events
    where account_id = ${accountId} and environment = ${environment} and id = ${id}`;
  return row;
}

export async function listEvents(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
  type?: string,
): Promise<Page<StoredEventRow>> {
  return pageQuery(
    page,
    (cursor, limit) => sql<(StoredEventRow & { seq: number })[]>`
    select id, account_id, environment, type, created_at, data, decision_id, seq from events
    where account_id = ${accountId} and environment = ${environment}
      ${type ? sql`and type = ${type}` : sql``}
      ${cursor === null ? sql`` : sql`and seq < (select seq from events where account_id = ${accountId} and environment = ${environment} and id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from events where account_id = ${accountId} and environment = ${environment} and id = ${cursor}`,
      ),
  );
}
