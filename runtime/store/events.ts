/**
 * The events of an environment: the `events` table, written in the same
 * transaction as the change that caused it, and the decision.allow /
 * decision.deny events derived from their decisions (migration 025), listed
 * together newest first.
 */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import { pageQuery, type Page, type PageParams } from './pagination.js';

type Fragment = ReturnType<SqlOrTx>;

export interface EventRow {
  id: string;
  account_id: string;
  environment: Environment;
  type: string;
  created_at: Date;
  data: Record<string, unknown>;
}

/**
 * An event as stored or derived: a decision.allow / decision.deny event holds no
 * body (`data` null) but names its decision (migrations 017 and 025);
 * runtime/events/references.ts builds the body when the event is read.
 */
export interface StoredEventRow extends Omit<EventRow, 'data'> {
  data: Record<string, unknown> | null;
  /** Set on a decision event that names its decision (then `data` is null). */
  decision_id?: string | null;
}

/** The types of the events derived from decisions (the decisions' effects, prefixed). */
export const DERIVED_EVENT_TYPES: readonly string[] = ['decision.allow', 'decision.deny'];

/**
 * The id of the event derived from decision `decisionId`: `evt_` and the
 * decision id's suffix (the same time part: events and decisions sort alike).
 * The SQL side writes the same (`'evt_' || substr(id, 5)`).
 *
 * @example
 * derivedEventId('dec_0Vc61Q613aQJNECs8Lrjz8HE'); // => 'evt_0Vc61Q613aQJNECs8Lrjz8HE'
 */
export function derivedEventId(decisionId: string): string {
  return `evt_${decisionId.slice(4)}`;
}

/** Rows per insert: six parameters each, well under PostgreSQL's 65,535 parameters per statement. */
const INSERT_CHUNK = 5_000;

export async function insertEvents(sql: SqlOrTx, events: readonly EventRow[]): Promise<void> {
  for (let i = 0; i < events.length; i += INSERT_CHUNK) await insertChunk(sql, events.slice(i, i + INSERT_CHUNK));
}

async function insertChunk(sql: SqlOrTx, events: readonly EventRow[]): Promise<void> {
  await sql`insert into events ${sql(events.map((e) => ({ ...e, data: sql.json(e.data as never) })) as never, 'id', 'account_id', 'environment', 'type', 'created_at', 'data')}`;
}

/** The decision a derived event id names (`dec_` and its suffix); the other ids name none. */
const decisionIdOf = (eventId: string) => (eventId.startsWith('evt_') ? `dec_${eventId.slice(4)}` : '');

/** The decision rows with a derived event (allow or deny when decided, written after migration 025), as events. */
const DERIVED = (sql: SqlOrTx, accountId: string, environment: Environment) => sql`
  select 'evt_' || substr(d.id, 5) as id, d.account_id, d.environment, 'decision.' || d.effect as type,
    d.evaluated_at as created_at, null::jsonb as data, d.id as decision_id, 1 as src, d.seq
  from decisions d
  where d.account_id = ${accountId} and d.environment = ${environment} and d.review_status is null
    and d.seq > (select derived_events_after from decision_log_state)`;

/** Events rows, but those that only anchor a derived event's deliveries (listed from its decision). */
const STORED = (sql: SqlOrTx, accountId: string, environment: Environment) => sql`
  select e.id, e.account_id, e.environment, e.type, e.created_at, e.data, e.decision_id, 0 as src, e.seq
  from events e
  where e.account_id = ${accountId} and e.environment = ${environment}
    and (e.decision_id is null or e.id <> 'evt_' || substr(e.decision_id, 5))`;

/** An event by id: its events row, or the event derived from its decision. */
export async function findEvent(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<StoredEventRow | undefined> {
  const [row] = await sql<StoredEventRow[]>`
    (select id, account_id, environment, type, created_at, data, decision_id from events
     where account_id = ${accountId} and environment = ${environment} and id = ${id})
    union all
    (select id, account_id, environment, type, created_at, data, decision_id
     from (${DERIVED(sql, accountId, environment)} and d.id = ${decisionIdOf(id)}) derived)
    limit 1`;
  return row;
}

/**
 * Events newest first: by time (`created_at`; a derived event's is its
 * decision's `evaluated_at`), then, in one millisecond, the events rows before
 * the derived decision events (older: an agent's registration, a budget's
 * event, are stored before the decision that caused them), each in the order
 * it was stored (`seq`). Both sides are read through an index in that order
 * (events_list, decisions_by_time) and merged. `starting_after` is any event of
 * the environment (whatever `type`): its place in that order bounds both sides.
 */
export async function listEvents(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
  type?: string,
): Promise<Page<StoredEventRow>> {
  const withDerived = type === undefined || DERIVED_EVENT_TYPES.includes(type);
  return pageQuery(
    page,
    async (cursor, limit) => {
      // The cursor's place: (created_at, side, seq); none when it names no event (then no row at all).
      const place =
        cursor === null
          ? sql``
          : sql`with cursor as (
              select at, src, seq from (
                (select created_at as at, src, seq from (${STORED(sql, accountId, environment)} and e.id = ${cursor}) s)
                union all
                (select created_at, src, seq from (${DERIVED(sql, accountId, environment)} and d.id = ${decisionIdOf(cursor)}) r)
              ) c limit 1)`;
      // The first condition alone can bound an index scan; the second places the rows of the cursor's time.
      const after = (time: Fragment, src: Fragment, seq: Fragment) =>
        cursor === null
          ? sql``
          : sql`and ${time} <= (select at from cursor) and (${time}, ${src}, ${seq}) < (select at, src, seq from cursor)`;
      const stored = sql`${STORED(sql, accountId, environment)}
        ${type === undefined ? sql`` : sql`and e.type = ${type}`} ${after(sql`e.created_at`, sql`0`, sql`e.seq`)}
        order by e.created_at desc, e.seq desc limit ${limit}`;
      const derived = sql`${DERIVED(sql, accountId, environment)}
        ${type === undefined ? sql`` : sql`and d.effect = ${type.slice('decision.'.length)}`} ${after(sql`d.evaluated_at`, sql`1`, sql`d.seq`)}
        order by d.evaluated_at desc, d.seq desc limit ${limit}`;
      const rows = await sql<Array<StoredEventRow & { src: number; seq: number }>>`
        ${place}
        select * from ((${stored}) ${withDerived ? sql`union all (${derived})` : sql``}) merged
        order by created_at desc, src desc, seq desc limit ${limit}`;
      return rows.map(({ src: _src, ...row }) => row);
    },
    (cursor) => findEvent(sql, accountId, environment, cursor).then((row) => row !== undefined),
  );
}
