/**
 * History leases in the store (migration 026, docs/history.md#leases): taking
 * the lease of a scope key with that key's entries, saying which leases a
 * process still holds, letting go of idle ones, and the upkeep's cleaning. The
 * decisions decided from a lease are written by writeLeasedBatch
 * (store/decisions.ts, functions/authz_write_leased.sql).
 */
import type { Environment } from '../tenant.js';
import type { Sql, SqlOrTx } from './connect.js';

/** An entry as a lease holder keeps it in memory (amounts as the store's decimal text). */
export interface LeasedEntry {
  decision_id: string;
  action: string;
  kind: 'counted' | 'denied';
  amount: string | null;
  confirmed_amount: string | null;
  match_values: Record<string, unknown>;
  evaluated_at_ms: number;
  keep_until_ms: number;
}

/** The scope key a lease is of. */
export interface LeaseTarget {
  /** `<account>\x1f<environment>\x1f<scope>\x1f<value>`, as the limits gate locks it. */
  lockKey: string;
  accountId: string;
  environment: Environment;
  scope: 'session' | 'agent' | 'user' | 'environment';
  /** The scope's value; null for the environment. */
  key: string | null;
}

/** A lease held: its epoch (int8 as text). */
export interface HeldLease {
  lock_key: string;
  epoch: string;
}

/** The SQLSTATE of a leased write whose lease has ended (functions/authz_write_leased.sql). */
export const LEASE_ENDED = 'AZL01';

class TooMany extends Error {}

/**
 * Takes the lease of `target` for `holder` (whoever held it loses it) and reads
 * the key's entries not yet past their keep_until and made at most `reachSeconds`
 * (and a minute) before `nowMs`, in one transaction under the key's advisory
 * lock; null, and no lease, when it has more than `cap` entries. The reach bounds
 * the read to the decision log's partitions of that time: a leased entry stays in
 * its decision's row until its partition is dropped (migration 029).
 *
 * @example
 * const lease = await takeLease(sql, 'inst_1', { lockKey: 'acct_1\x1ftest\x1fsession\x1frun-1', accountId: 'acct_1', environment: 'test', scope: 'session', key: 'run-1' }, Date.now(), 10_000, 3600);
 */
export async function takeLease(
  sql: Sql,
  holder: string,
  target: LeaseTarget,
  nowMs: number,
  cap: number,
  reachSeconds: number,
): Promise<{ epoch: string; entries: LeasedEntry[] } | null> {
  const sinceMs = nowMs - reachSeconds * 1000 - 60_000;
  try {
    return await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${target.lockKey}, 0))`;
      const [lease] = await tx<Array<{ epoch: string }>>`
        insert into history_leases (lock_key, holder, epoch, renewed_at)
        values (${target.lockKey}, ${holder}, nextval('history_lease_epochs'), now())
        on conflict (lock_key) do update set holder = excluded.holder, epoch = excluded.epoch, renewed_at = excluded.renewed_at
        returning epoch::text as epoch`;
      const entries = await tx<LeasedEntry[]>`
        select decision_id, action, kind, amount::text as amount, confirmed_amount::text as confirmed_amount, match_values,
          (extract(epoch from evaluated_at) * 1000)::float8 as evaluated_at_ms,
          (extract(epoch from keep_until) * 1000)::float8 as keep_until_ms
        from history_entries
        where account_id = ${target.accountId} and environment = ${target.environment} and ${scopeFilter(tx, target)}
          and keep_until >= to_timestamp(${nowMs}::float8 / 1000)
          and evaluated_at >= to_timestamp(${sinceMs}::float8 / 1000)
          and log_id >= authz_id_floor('dec', to_timestamp(${sinceMs}::float8 / 1000) - interval '1 minute')
        limit ${cap + 1}`;
      if (entries.length > cap) throw new TooMany();
      return { epoch: lease!.epoch, entries: [...entries] };
    });
  } catch (error) {
    if (error instanceof TooMany) return null;
    throw error;
  }
}

/** The entries of one scope key, as the scope's index (migration 024) holds them. */
function scopeFilter(sql: SqlOrTx, t: LeaseTarget) {
  switch (t.scope) {
    case 'session':
      return sql`session_id = ${t.key} and session_id is not null and (scopes & 1) <> 0`;
    case 'agent':
      return sql`agent_id = ${t.key} and (scopes & 2) <> 0`;
    case 'user':
      return sql`on_behalf_of = ${t.key} and on_behalf_of is not null and (scopes & 4) <> 0`;
    case 'environment':
      return sql`(scopes & 8) <> 0`;
  }
}

/** The rows (`l`) of `leases` that `holder` still holds at their epochs: an update's FROM and WHERE. */
const heldBy = (sql: SqlOrTx, holder: string, leases: readonly HeldLease[]) =>
  sql`from unnest(${leases.map((l) => l.lock_key)}::text[], ${leases.map((l) => l.epoch)}::bigint[]) as h(lock_key, epoch)
    where l.lock_key = h.lock_key and l.epoch = h.epoch and l.holder = ${holder}`;

/**
 * Of `leases`, those `holder` still holds at their epochs (their renewed_at set to now); the others have ended.
 *
 * @example
 * const still = await renewLeases(sql, 'proc_1', [{ lock_key: 'acct_1\x1ftest\x1fsession\x1frun-1', epoch: '42' }]);
 */
export async function renewLeases(sql: SqlOrTx, holder: string, leases: readonly HeldLease[]): Promise<Set<string>> {
  if (leases.length === 0) return new Set();
  const rows = await sql<Array<{ lock_key: string }>>`
    update history_leases l set renewed_at = now() ${heldBy(sql, holder, leases)}
    returning l.lock_key`;
  return new Set(rows.map((r) => r.lock_key));
}

/**
 * Lets go of leases (their memory dropped), with a new epoch: a write this
 * holder decided under one and has not stored yet fails (the limits gate moves
 * only held leases' epochs, so it could otherwise decide the key meanwhile
 * without that write, and the write be stored after it).
 *
 * @example
 * await releaseLeases(sql, 'proc_1', [{ lock_key: 'acct_1\x1ftest\x1fsession\x1frun-1', epoch: '42' }]);
 */
export async function releaseLeases(sql: SqlOrTx, holder: string, leases: readonly HeldLease[]): Promise<void> {
  if (leases.length === 0) return;
  await sql`
    update history_leases l set holder = null, epoch = nextval('history_lease_epochs') ${heldBy(sql, holder, leases)}`;
}

/**
 * Deletes up to `batch` leases nobody holds, or whose holder has not renewed
 * them for `staleSeconds` (the database's clock, which renews them: a process
 * that died); how many. Safe whenever: a holder's write needs its row at its
 * epoch, and epochs never repeat.
 *
 * @example
 * const deleted = await pruneLeases(sql, 600);
 */
export async function pruneLeases(sql: SqlOrTx, staleSeconds: number, batch = 5000): Promise<number> {
  const rows = await sql`delete from history_leases where lock_key = any (array(
    select lock_key from history_leases
    where holder is null or renewed_at < now() - make_interval(secs => ${staleSeconds}::float8)
    limit ${batch})) returning 1`;
  return rows.length;
}
