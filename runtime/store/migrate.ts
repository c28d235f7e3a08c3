/**
 * Schema migrations, then the SQL functions.
 *
 * 1. Numbered migrations `NNN_name.sql` in runtime/store/migrations/ (table changes,
 *    and the `drop function` of a signature that changed) are applied in name
 *    order, skipping those already recorded in `schema_migrations`. A migration
 *    that needs a function while it runs (a trigger it creates, a call in its
 *    statements) includes its file with a line `\ir ../functions/<name>.sql`.
 * 2. Function files `runtime/store/functions/<name>.sql` (one
 *    `create or replace function` each: the one live definition, see
 *    store/function-files.ts) are applied after every migration, a function
 *    after those it calls, each only when its file's sha256 differs from the one
 *    recorded in `schema_functions` (so: on a fresh store, and whenever the file
 *    changed) or its function is missing from the store. A file no longer
 *    present is forgotten (a migration drops it).
 *
 * Each migration file runs in its own transaction together with the row that
 * records it, so a failing file leaves nothing behind and is retried on the next
 * start; the function files run in one transaction together (functions that
 * call each other change together). Every transaction first takes the same
 * transaction-level advisory lock, and reads what is recorded only once it holds
 * it: when several processes start at once, each file is applied by exactly one
 * of them, and none of them returns before every file is applied.
 *
 * The .sql files are not copied by `tsc`: the folders are found by walking up
 * from this module (source `runtime/store/` or build `dist/runtime/store/`) to
 * the directory holding `package.json`, then `runtime/store/migrations` and
 * `runtime/store/functions` under it — so the package must ship both.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOCKS } from './channels.js';
import type { Sql, Tx } from './connect.js';
import { expandIncludes, readFunctionFiles } from './function-files.js';

const MIGRATION_FILE = /^\d{3}_[A-Za-z0-9_-]+\.sql$/;

export interface MigrateOptions {
  /** Folder of the numbered .sql files; defaults to the package's `runtime/store/migrations`. */
  dir?: string;
  /**
   * Folder of the function files applied after the migrations; defaults to the
   * package's `runtime/store/functions` when `dir` is not given, else none;
   * null: none. (A migration's `\ir ../functions/<name>.sql` is always read
   * relative to `dir`, as psql would.)
   */
  functionsDir?: string | null;
}

/** Applies the pending migrations, then the changed function files; returns the migrations (file names) it applied, in order. */
export async function migrate(sql: Sql, options: MigrateOptions = {}): Promise<string[]> {
  const dir = options.dir ?? migrationsDir();
  const fnDir =
    options.functionsDir !== undefined
      ? options.functionsDir
      : options.dir === undefined
        ? packageFolder('functions')
        : null;
  const files = readdirSync(dir)
    .filter((name) => MIGRATION_FILE.test(name))
    .sort();

  await sql.begin(async (tx) => {
    await lock(tx);
    await tx`create table if not exists schema_migrations (
      name        text primary key,
      applied_at  timestamptz not null
    )`;
    await tx`create table if not exists schema_functions (
      name        text primary key,
      sha256      text not null,
      applied_at  timestamptz not null
    )`;
  });

  const applied: string[] = [];
  for (const name of files) {
    const text = expandIncludes(name, readFileSync(join(dir, name), 'utf8'), join(dir, '..', 'functions'));
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
  if (fnDir !== null) await applyFunctions(sql, fnDir);
  return applied;
}

/**
 * Applies the function files of `dir` whose sha256 is not the one recorded, or
 * whose function the store lacks (in call order, in one transaction), records
 * them, and forgets files no longer there; returns the names it applied.
 * `migrate` calls it after the migrations.
 */
export async function applyFunctions(sql: Sql, dir: string): Promise<string[]> {
  const files = readFunctionFiles(dir);
  return sql.begin(async (tx) => {
    await lock(tx);
    const rows = await tx<Array<{ name: string; sha256: string }>>`select name, sha256 from schema_functions`;
    const recorded = new Map(rows.map((r) => [r.name, r.sha256]));
    // A function gone though its file is unchanged (dropped with a type it takes, by a
    // `drop ... cascade`, by hand) is applied again too.
    const existing = await tx<Array<{ name: string }>>`
      select distinct proname as name from pg_proc where pronamespace = (select oid from pg_namespace where nspname = current_schema())`;
    const exists = new Set(existing.map((r) => r.name));
    const applied: string[] = [];
    for (const f of files) {
      if (recorded.get(f.name) === f.hash && exists.has(f.name)) continue;
      await tx.unsafe(f.text);
      await tx`insert into schema_functions (name, sha256, applied_at) values (${f.name}, ${f.hash}, now())
               on conflict (name) do update set sha256 = excluded.sha256, applied_at = excluded.applied_at`;
      applied.push(f.name);
    }
    const present = new Set(files.map((f) => f.name));
    for (const name of recorded.keys())
      if (!present.has(name)) await tx`delete from schema_functions where name = ${name}`;
    return applied;
  });
}

async function lock(tx: Tx): Promise<void> {
  await tx.unsafe(`select pg_advisory_xact_lock(${LOCKS.migrations})`);
}

const cachedDirs = new Map<string, string>();

/** `<package root>/runtime/store/migrations`, the package root being the nearest ancestor with package.json. */
export function migrationsDir(): string {
  return packageFolder('migrations');
}

/** `<package root>/runtime/store/functions`: the function files. */
export function functionsDir(): string {
  return packageFolder('functions');
}

function packageFolder(name: 'migrations' | 'functions'): string {
  const cached = cachedDirs.get(name);
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) {
      const found = join(dir, 'runtime', 'store', name);
      if (!existsSync(found)) throw new Error(`${name} folder not found: ${found}`);
      cachedDirs.set(name, found);
      return found;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}
