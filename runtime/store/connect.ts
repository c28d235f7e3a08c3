/**
 * Opens the store: one postgres.js client for both kinds of storage.
 *
 * - `databaseUrl` set → a pooled connection to PostgreSQL (`kind: 'postgres'`).
 * - otherwise → the embedded store (`kind: 'embedded'`): PGlite (on disk in
 *   `dataDir`, or in memory with `'memory://'`) spoken to over the PostgreSQL
 *   wire protocol in process (pglite-wire.ts: postgres.js's `socket` option), so
 *   there is no listener any other process could connect to. One connection
 *   (PGlite runs one session). LISTEN/NOTIFY needs a second connection, so the
 *   embedded store reports `supportsListen: false` and callers must not LISTEN.
 *   On disk, the data directory is 0700 and its files owner-only
 *   (private-files.ts), fixed at every open and close, and locked to one
 *   process (data-dir-lock.ts: a second opener gets StoreLockedError).
 *
 * Repositories take `SqlOrTx` and use tagged templates, so they run unchanged
 * on both. Column names come back as in the schema (snake_case, no transform);
 * `bigint` columns (e.g. `seq`, `version`, `count(*)`) come back as JS numbers,
 * `timestamptz` as `Date`, `double precision` as number, `jsonb` parsed.
 */
import postgres from 'postgres';
import { PGlite } from '@electric-sql/pglite';
import { PGliteWire } from './pglite-wire.js';
import { lockDataDir } from './data-dir-lock.js';
import { ensurePrivateDir, restrictTree } from './private-files.js';

export type Sql = postgres.Sql<{}>;
export type Tx = postgres.TransactionSql<{}>;
export type SqlOrTx = Sql | Tx;

export interface Store {
  sql: Sql;
  kind: 'postgres' | 'embedded';
  supportsListen: boolean;
  /** Closes the client (and, embedded, PGlite, flushing to disk). Idempotent. */
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL connection URL; when absent the embedded store is used. */
  databaseUrl?: string;
  /** Embedded only: a directory (created if missing) or `'memory://'`. Defaults to `'memory://'`. */
  dataDir?: string;
  /** Pool size for PostgreSQL (default 10). Ignored by the embedded store, which has one connection. */
  max?: number;
  /** Embedded only: told once when the data directory's lock is held by a process that is stopping, and waited for (data-dir-lock.ts). */
  onLockWait?: (message: string) => void;
}

const INT8_OID = 20;

/** `bigint`/`int8` as a JS number (ids and counters here stay far below 2^53). */
const bigintAsNumber = {
  to: INT8_OID,
  from: [INT8_OID],
  serialize: (x: number | bigint | string) => String(x),
  parse: (x: string) => Number(x),
};

/**
 * Seconds before reconnecting after the retries-th failed connection. postgres.js
 * defaults to up to 20 s (3^retries / 100), and queries queue for that long: while
 * the store is down a request would hang instead of answering 503, and after it is
 * back (or a standby was promoted) the first requests would still wait. Capped at
 * 0.25 s: at most 4 attempts a second per pooled connection while no server
 * answers, and answers again within about that once one does
 * (docs/operations.md, Failover).
 */
export function reconnectBackoff(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 0.25);
}

function baseOptions() {
  return {
    onnotice: () => {},
    connect_timeout: 10,
    backoff: reconnectBackoff,
    types: { bigint: bigintAsNumber },
  };
}

export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.max ?? 10);
  return openEmbedded(options.dataDir ?? 'memory://', options.onLockWait);
}

async function openPostgres(url: string, max: number): Promise<Store> {
  const sql = postgres(url, { ...baseOptions(), max, idle_timeout: 30 }) as unknown as Sql;
  try {
    // Fail fast on a wrong URL instead of on the first request.
    await sql`select 1`;
  } catch (err) {
    await sql.end({ timeout: 0 }).catch(() => {});
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    sql,
    kind: 'postgres',
    supportsListen: true,
    close() {
      closing ??= sql.end({ timeout: 5 });
      return closing;
    },
  };
}

async function openEmbedded(dataDir: string, onLockWait?: (message: string) => void): Promise<Store> {
  const onDisk = !dataDir.includes('://');
  if (onDisk) ensurePrivateDir(dataDir);
  // One process per data directory: StoreLockedError before PGlite touches it.
  const unlock = onDisk ? await lockDataDir(dataDir, onLockWait ? { onWait: onLockWait } : {}) : () => {};
  let db: PGlite;
  try {
    db = await PGlite.create(dataDir);
  } catch (err) {
    unlock();
    throw err;
  }
  let sql: Sql | undefined;
  try {
    if (onDisk) restrictTree(dataDir);
    sql = postgres({
      ...baseOptions(),
      // No host, port or path: every connection is a PGliteWire in this process.
      socket: () => new PGliteWire(db),
      ssl: false,
      user: 'postgres',
      database: 'postgres',
      max: 1,
      // One long-lived connection: never close it for idleness or age.
      idle_timeout: 0,
      max_lifetime: null,
    } as postgres.Options<{}>) as unknown as Sql;
    await sql`select 1`;
  } catch (err) {
    await sql?.end({ timeout: 0 }).catch(() => {});
    await db.close().catch(() => {});
    unlock();
    throw err;
  }
  const client = sql;
  let closing: Promise<void> | undefined;
  return {
    sql: client,
    kind: 'embedded',
    supportsListen: false,
    close() {
      closing ??= (async () => {
        try {
          await client.end({ timeout: 5 });
        } finally {
          await db.close();
          if (onDisk) restrictTree(dataDir);
          unlock();
        }
      })();
      return closing;
    },
  };
}
