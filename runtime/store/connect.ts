/**
 * Opens the store: one postgres.js client for both kinds of storage.
 *
 * - `databaseUrl` set → a pooled connection to PostgreSQL (`kind: 'postgres'`).
 * - otherwise → the embedded store (`kind: 'embedded'`): PGlite (on disk in
 *   `dataDir`, or in memory with `'memory://'`) served over the PostgreSQL wire
 *   protocol by `PGLiteSocketServer` on 127.0.0.1 with an ephemeral port, and
 *   postgres.js connects to it with a single connection (PGlite runs one
 *   session). LISTEN/NOTIFY needs a second connection, so the embedded store
 *   reports `supportsListen: false` and callers must not LISTEN.
 *
 * Repositories take `SqlOrTx` and use tagged templates, so they run unchanged
 * on both. Column names come back as in the schema (snake_case, no transform);
 * `bigint` columns (e.g. `seq`, `version`, `count(*)`) come back as JS numbers,
 * `timestamptz` as `Date`, `double precision` as number, `jsonb` parsed.
 */
import { mkdirSync } from 'node:fs';
import postgres from 'postgres';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export type Sql = postgres.Sql<{}>;
export type Tx = postgres.TransactionSql<{}>;
export type SqlOrTx = Sql | Tx;

export interface Store {
  sql: Sql;
  kind: 'postgres' | 'embedded';
  supportsListen: boolean;
  /** Closes the client (and, embedded, the socket server and PGlite, flushing to disk). Idempotent. */
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL connection URL; when absent the embedded store is used. */
  databaseUrl?: string;
  /** Embedded only: a directory (created if missing) or `'memory://'`. Defaults to `'memory://'`. */
  dataDir?: string;
  /** Pool size for PostgreSQL (default 10). Ignored by the embedded store, which has one connection. */
  max?: number;
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
 * back the first requests would still wait. Capped at 1 s.
 */
export function reconnectBackoff(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1);
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
  return openEmbedded(options.dataDir ?? 'memory://');
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

async function openEmbedded(dataDir: string): Promise<Store> {
  if (!dataDir.includes('://')) mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir);
  // maxConnections 2 (not 1): the client only ever holds one connection, but if
  // it reconnects the old socket's handler may not be released yet.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 2 });
  let sql: Sql | undefined;
  try {
    await server.start();
    const port = Number(server.getServerConn().split(':').pop());
    if (!Number.isInteger(port) || port <= 0) throw new Error(`embedded store: no port from ${server.getServerConn()}`);
    sql = postgres({
      ...baseOptions(),
      host: '127.0.0.1',
      port,
      user: 'postgres',
      database: 'postgres',
      max: 1,
      // One long-lived connection: never close it for idleness or age.
      idle_timeout: 0,
      max_lifetime: null,
    }) as unknown as Sql;
    await sql`select 1`;
  } catch (err) {
    await sql?.end({ timeout: 0 }).catch(() => {});
    await server.stop().catch(() => {});
    await db.close().catch(() => {});
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
          try {
            await server.stop();
          } finally {
            await db.close();
          }
        }
      })();
      return closing;
    },
  };
}
