/**
 * Schema migrations: applies `runtime/store/migrations/NNN_name.sql` in name
 * order, skipping those already recorded in `schema_migrations`.
 *
 * Each file runs in its own transaction together with the row that records it,
 * so a failing file leaves nothing behind and is retried on the next start.
 * Every transaction first takes the same transaction-level advisory lock, and
 * checks `schema_migrations` only once it holds it: when several processes
 * start at once, each file is applied by exactly one of them, and none of them
 * returns before every file is applied.
 *
 * The .sql files are not copied by `tsc`: the folder is found by walking up from
 * this module (source `runtime/store/` or build `dist/runtime/store/`) to the
 * directory holding `package.json`, then `runtime/store/migrations` under it —
 * so the package must ship `runtime/store/migrations`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOCKS } from './channels.js';
import type { Sql, Tx } from './connect.js';

const MIGRATION_FILE = /^\d{3}_[A-Za-z0-9_-]+\.sql$/;

export interface MigrateOptions {
  /** Folder of the .sql files; defaults to the package's `runtime/store/migrations`. */
  dir?: string;
}

/** Applies the pending migrations; returns the names (file names) it applied, in order. */
export async function migrate(sql: Sql, options: MigrateOptions = {}): Promise<string[]> {
  const dir = options.dir ?? migrationsDir();
  const files = readdirSync(dir)
    .filter((name) => MIGRATION_FILE.test(name))
    .sort();

  await sql.begin(async (tx) => {
    await lock(tx);
    await tx`create table if not exists schema_migrations (
      name        text primary key,
      applied_at  timestamptz not null
    )`;
  });

  const applied: string[] = [];
  for (const name of files) {
    const text = readFileSync(join(dir, name), 'utf8');
    const done = await sql.begin(async (tx) => {
      await lock(tx);
      const [row] = await tx`select 1 as one from schema_migrations where name = ${name}`;
      if (row) return false;
      // No parameters: postgres.js sends it with the simple query protocol, which
      // runs a multi-statement file in one go.
      await tx.unsafe(text);
      await tx`insert into schema_migrations (name, applied_at) values (${name}, now())`;
      return true;
    });
    if (done) applied.push(name);
  }
  return applied;
}

async function lock(tx: Tx): Promise<void> {
  await tx.unsafe(`select pg_advisory_xact_lock(${LOCKS.migrations})`);
}

let cachedDir: string | undefined;

/** `<package root>/runtime/store/migrations`, the package root being the nearest ancestor with package.json. */
export function migrationsDir(): string {
  if (cachedDir) return cachedDir;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) {
      const found = join(dir, 'runtime', 'store', 'migrations');
      if (!existsSync(found)) throw new Error(`migrations folder not found: ${found}`);
      cachedDir = found;
      return found;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}
