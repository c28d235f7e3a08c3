/**
 * The decision log's daily partitions (migration 015): decisions, events,
 * webhook_deliveries and webhook_attempts, partitioned by range on their ids,
 * which sort by time (runtime/ids.ts). A UTC day is the id range
 * [prefix_<time of its 00:00>, prefix_<time of the next 00:00>).
 *
 * This module lists the partitions, creates one (moving the default partition's
 * rows of its range into it, in SQL: authz_create_log_partition), drops one
 * when nothing in it is still live, trims the default partitions row by row,
 * and turns a time range into the id range that lets PostgreSQL skip the other
 * partitions. The schedule (which days, when) is runtime/background/decision-log.ts.
 */
import { LOCKS } from './channels.js';
import type { Sql, SqlOrTx, Tx } from './connect.js';

export const DAY_MS = 86_400_000;

/** The tables with partitions of their own (webhook_attempts follows webhook_deliveries). */
export type LogTable = 'decisions' | 'events' | 'webhook_deliveries';
/** In the order a day is dropped: decisions last, since the events that name their decision read them (migrations 017, 025). */
export const LOG_TABLES: readonly LogTable[] = ['events', 'webhook_deliveries', 'decisions'];

const PREFIX: Record<LogTable, string> = { decisions: 'dec', events: 'evt', webhook_deliveries: 'whd' };

/** The day's id range [lo, hi) of `table`'s ids, made in SQL (functions/authz_id_floor.sql). */
async function dayIds(sql: SqlOrTx, table: LogTable, day: string): Promise<{ lo: string; hi: string }> {
  const [row] = await sql<Array<{ lo: string; hi: string }>>`
    select authz_id_floor(${PREFIX[table]}, ${day}::date::timestamp at time zone 'UTC') as lo,
           authz_id_floor(${PREFIX[table]}, (${day}::date + 1)::timestamp at time zone 'UTC') as hi`;
  return row!;
}

/** The UTC day holding `ms`, as `YYYY-MM-DD`. */
export function dayOf(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** The partition name of `table` for `day` (`decisions_p20261121`). */
export function partitionName(table: LogTable | 'webhook_attempts', day: string): string {
  return `${table}_p${day.replaceAll('-', '')}`;
}

export interface LogPartition {
  table: LogTable;
  /** `YYYY-MM-DD` (UTC). */
  day: string;
}

/** The daily partitions that exist (not the default ones), oldest first. */
export async function listLogPartitions(sql: SqlOrTx): Promise<LogPartition[]> {
  const rows = await sql<Array<{ parent: string; name: string }>>`
    select p.relname as parent, c.relname as name
    from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname in ('decisions', 'events', 'webhook_deliveries') and c.relname ~ '_p[0-9]{8}$'
    order by c.relname`;
  return rows
    .map((r) => {
      const d = r.name.slice(-8);
      return { table: r.parent as LogTable, day: `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}` };
    })
    .sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}

/**
 * Creates `table`'s partition of `day` unless it exists (true when it made it),
 * one process at a time (false, nothing done, while another holds the lock).
 * Waits at most `lockTimeoutMs` for a lock: inserts queue behind a waiting lock.
 */
export async function createLogPartition(
  sql: Sql,
  table: LogTable,
  day: string,
  lockTimeoutMs: number,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await tryLock(tx))) return false;
    await tx.unsafe(`set local lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
    const [row] = await tx<
      Array<{ created: boolean }>
    >`select authz_create_log_partition(${table}, ${day}::date) as created`;
    return row!.created;
  });
}

/** What stops a partition from being dropped: nothing (null), or why, and until when if that is known. */
export interface Liveness {
  reason: 'pending_decision' | 'held_budget' | 'pending_delivery';
  /** The service time after which the reason will have passed by itself, when known. */
  untilMs: number | null;
}

/**
 * Whether `table`'s partition of `day` holds a row that must not be lost yet at
 * `nowMs`: a decision still pending (before its expiry) or awaiting approval
 * (until the review sweep settles it), a budget hold still held for
 * one of its decisions, a pending webhook delivery (its own, or for one of its
 * events; for decisions, for one of the same day's events, whose bodies they are).
 */
export async function partitionLiveness(
  sql: SqlOrTx,
  table: LogTable,
  day: string,
  nowMs: number,
): Promise<Liveness | null> {
  const { lo, hi } = await dayIds(sql, table, day);
  const name = sql(partitionName(table, day));
  if (table === 'decisions') {
    // Cheap checks first (partial indexes), the scan of the day's pending decisions last.
    // Awaiting approval: live until the review sweep settles it (a verdict or review.timeout), whatever the time.
    const [awaiting] = await sql`select 1 from ${name} where status = 'awaiting_approval' limit 1`;
    if (awaiting) return { reason: 'pending_decision', untilMs: null };
    const [held] =
      await sql`select 1 from budget_holds where status = 'held' and decision_id collate "C" >= ${lo} and decision_id collate "C" < ${hi} limit 1`;
    if (held) return { reason: 'held_budget', untilMs: null };
    // Allow and deny events name their decision (migrations 017, 025): their bodies are built from these rows,
    // so the day's decisions stay while one of the day's events still has a delivery to make.
    const events = await dayIds(sql, 'events', day);
    const [delivering] =
      await sql`select 1 from webhook_deliveries where status = 'pending' and event_id >= ${events.lo} and event_id < ${events.hi} limit 1`;
    if (delivering) return { reason: 'pending_delivery', untilMs: null };
    const [live] = await sql<
      Array<{ until: Date | null }>
    >`select max(expires_at) as until from ${name} where status = 'pending'`;
    if (live?.until && live.until.getTime() > nowMs)
      return { reason: 'pending_decision', untilMs: live.until.getTime() };
    return null;
  }
  if (table === 'events') {
    const [pending] =
      await sql`select 1 from webhook_deliveries where status = 'pending' and event_id >= ${lo} and event_id < ${hi} limit 1`;
    return pending ? { reason: 'pending_delivery', untilMs: null } : null;
  }
  const [pending] = await sql`select 1 from ${name} where status = 'pending' limit 1`;
  return pending ? { reason: 'pending_delivery', untilMs: null } : null;
}

export type DropOutcome = { dropped: true } | { dropped: false; live: Liveness | null; busy?: true };

/**
 * Drops `table`'s partition of `day` (webhook_deliveries with its attempts)
 * unless it holds a live row ({@link partitionLiveness}), checked again under a
 * lock that keeps new rows out of it. The drop locks the parent table briefly
 * (ACCESS EXCLUSIVE): at most `lockTimeoutMs` is spent waiting for it, else the
 * outcome is `busy` and the next round tries again.
 */
export async function dropLogPartition(
  sql: Sql,
  table: LogTable,
  day: string,
  nowMs: number,
  lockTimeoutMs: number,
): Promise<DropOutcome> {
  // The full check outside any lock (it may read the whole day when decisions are pending).
  const live = await partitionLiveness(sql, table, day, nowMs);
  if (live) return { dropped: false, live };
  try {
    return await sql.begin(async (tx): Promise<DropOutcome> => {
      if (!(await tryLock(tx))) return { dropped: false, live: null, busy: true };
      await tx.unsafe(`set local lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
      const [exists] = await tx`select to_regclass(${partitionName(table, day)}) is not null as present`;
      if (!exists?.present) return { dropped: true };
      // Rows arrive in an old day only when the clock stepped back: keep them out, then look again.
      await tx.unsafe(`lock table ${partitionName(table, day)} in share mode`);
      const again = await partitionLiveness(tx, table, day, nowMs);
      if (again) return { dropped: false, live: again };
      if (table === 'webhook_deliveries') {
        await tx.unsafe(`drop table if exists ${partitionName('webhook_attempts', day)}`);
        // Referenced by webhook_attempts' foreign key: detached (checked to have no attempts left) before the drop.
        await tx.unsafe(`alter table webhook_deliveries detach partition ${partitionName(table, day)}`);
      }
      await tx.unsafe(`drop table ${partitionName(table, day)}`);
      return { dropped: true };
    });
  } catch (e) {
    if (isLockTimeout(e)) return { dropped: false, live: null, busy: true };
    throw e;
  }
}

/**
 * Deletes up to `batch` rows of `table`'s default partition written before
 * `cutoffMs` that are no longer live (the default holds rows of days without a
 * partition and rows with ids older than the time-sortable format): a decision
 * stays while an event that names it has a pending delivery. Returns the
 * number deleted.
 */
export async function trimDefaultPartition(
  sql: SqlOrTx,
  table: LogTable,
  cutoffMs: number,
  nowMs: number,
  batch: number,
): Promise<number> {
  const cutoff = new Date(cutoffMs);
  const now = new Date(nowMs);
  if (table === 'decisions') {
    const rows = await sql`
      delete from decisions_default where ctid = any (array(
        select d.ctid from decisions_default d
        where d.evaluated_at < ${cutoff}
          and d.status <> 'awaiting_approval' and not (d.status = 'pending' and d.expires_at > ${now})
          and not exists (select 1 from budget_holds h where h.account_id = d.account_id and h.environment = d.environment
                          and h.decision_id = d.id and h.status = 'held')
          -- The body of an event that names it and still has a delivery to make (migrations 017, 025).
          and d.id not in (select e.decision_id from webhook_deliveries w join events e on e.id = w.event_id
                           where w.status = 'pending' and e.decision_id is not null)
        limit ${batch}))`;
    return rows.count;
  }
  if (table === 'events') {
    const rows = await sql`
      delete from events_default where ctid = any (array(
        select e.ctid from events_default e
        where e.created_at < ${cutoff}
          and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
        limit ${batch}))`;
    return rows.count;
  }
  const rows = await sql`
    delete from webhook_deliveries_default where ctid = any (array(
      select ctid from webhook_deliveries_default where created_at < ${cutoff} and status <> 'pending' limit ${batch}))`;
  return rows.count;
}

/** One process at a time: the lock of the log's upkeep, for this transaction (false when another holds it). */
async function tryLock(tx: Tx): Promise<boolean> {
  const [row] = await tx<
    Array<{ locked: boolean }>
  >`select pg_try_advisory_xact_lock(${LOCKS.logPartitions}) as locked`;
  return row!.locked;
}

function isLockTimeout(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: string }).code === '55P03';
}

const legacyUntil = new WeakMap<object, Promise<number | null>>();

/**
 * The evaluated_at (ms) of the newest decision stored before ids told the time
 * (migration 008; recorded by migration 015), or null when there is none: a
 * read by time may narrow itself by id range only after it.
 */
export function legacyIdsUntil(sql: SqlOrTx): Promise<number | null> {
  let known = legacyUntil.get(sql);
  if (!known) {
    known = sql<Array<{ until: Date | null }>>`select legacy_until as until from decision_log_state`.then(
      (rows) => rows[0]?.until?.getTime() ?? null,
    );
    legacyUntil.set(sql, known);
  }
  return known;
}
