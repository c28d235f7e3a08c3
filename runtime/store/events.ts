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

export async function insertEvents(sql: SqlOrTx, events: readonly EventRow[]): Promise<void> {
  if (events.length === 0) return;
  await sql`insert into events ${sql(
    events.map((e) => ({ ...e, data: sql.json(e.data as never) })) as never,
    'id',
    'account_id',
    'environment',
    'type',
    'created_at',
    'data',
  )}`;
}

export async function findEvent(sql: SqlOrTx, accountId: string, environment: Environment, id: string): Promise<EventRow | undefined> {
  const [row] = await sql<EventRow[]>`
    select id, account_id, environment, type, created_at, data from events
    where account_id = ${accountId} and environment = ${environment} and id = ${id}`;
  return row;
}

export async function listEvents(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
  type?: string,
): Promise<Page<EventRow>> {
  return pageQuery(page, (cursor, limit) => sql<(EventRow & { seq: number })[]>`
    select id, account_id, environment, type, created_at, data, seq from events
    where account_id = ${accountId} and environment = ${environment}
      ${type ? sql`and type = ${type}` : sql``}
      ${cursor === null ? sql`` : sql`and seq < (select seq from events where account_id = ${accountId} and environment = ${environment} and id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) => exists(sql`select 1 from events where account_id = ${accountId} and environment = ${environment} and id = ${cursor}`),
  );
}
