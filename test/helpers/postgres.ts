/**
 * Test stores on both kinds of storage.
 *
 * PostgreSQL comes from test/global-setup.ts (`inject('pgAdminUrl')`: either
 * `DATABASE_URL` or a throwaway cluster started once per run); every test store
 * gets a database of its own, `t_<random>`, dropped by `dispose()`. The embedded
 * store is PGlite in memory.
 *
 *   describe.each(STORE_KINDS)('%s store', (kind) => {
 *     let store: TestStore;
 *     beforeAll(async () => { store = await openTestStore(kind); });
 *     afterAll(() => store.dispose());
 *   });
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';

export type StoreKind = 'postgres' | 'embedded';
export const STORE_KINDS: StoreKind[] = ['postgres', 'embedded'];

export type TestStore = Store & { url?: string; dispose(): Promise<void> };

/** The admin URL of the test server; throws (with the setup's reason) when there is none. */
export function pgAdminUrl(): string {
  // inject() is undefined when the global setup is not registered (another config).
  const url = inject('pgAdminUrl') || process.env.DATABASE_URL;
  if (url) return url;
  const reason = inject('pgSetupError') || 'test/global-setup.ts is not registered in vitest.config.ts';
  throw new Error(`no PostgreSQL server for tests: ${reason}`);
}

function adminClient(url: string) {
  return postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10, idle_timeout: 1 });
}

/** A new empty database on the test server. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = pgAdminUrl();
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = adminClient(adminUrl);
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropping: Promise<void> | undefined;
  return {
    url: url.toString(),
    drop() {
      dropping ??= (async () => {
        const client = adminClient(adminUrl);
        try {
          await client`select pg_terminate_backend(pid) from pg_stat_activity
                       where datname = ${name} and pid <> pg_backend_pid()`;
          await client.unsafe(`drop database if exists ${name}`);
        } finally {
          await client.end({ timeout: 5 });
        }
      })();
      return dropping;
    },
  };
}

/** A fresh, migrated store of the given kind; `dispose()` closes it (and drops its database). */
export async function openTestStore(kind: StoreKind): Promise<TestStore> {
  if (kind === 'embedded') {
    const store = await openStore({ dataDir: 'memory://' });
    try {
      await migrate(store.sql);
    } catch (err) {
      await store.close();
      throw err;
    }
    return Object.assign(store, { dispose: () => store.close() });
  }
  const db = await createTestDatabase();
  let store: Store | undefined;
  try {
    store = await openStore({ databaseUrl: db.url, max: 5 });
    await migrate(store.sql);
  } catch (err) {
    await store?.close();
    await db.drop();
    throw err;
  }
  const opened = store;
  return Object.assign(opened, {
    url: db.url,
    async dispose() {
      try {
        await opened.close();
      } finally {
        await db.drop();
      }
    },
  });
}
