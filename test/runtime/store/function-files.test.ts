/**
 * The SQL functions' one live definition each (runtime/store/functions/, applied
 * by runtime/store/migrate.ts after the numbered migrations), on both stores:
 *
 * - every function of a migrated store has its file (one signature each), and
 *   no other file of the package's code defines a function: not a numbered
 *   migration (one that needs a function includes its file), not a repository
 *   in TypeScript, not a second function file;
 * - a fresh store ends with the same schema (tables, columns, constraints,
 *   indexes, triggers, sequences, function definitions) as a store migrated by
 *   the numbered migrations of an older main, which still held every function
 *   body (the released OLD_MAIN, and PARTITIONS_MAIN from before 015-017), or
 *   by FILES_MAIN's migrations and function files (the first main with them:
 *   its files changed since, and two were added), and then by this runner: a
 *   user's store upgraded in place is a fresh one;
 * - a function file is applied again when its text changes or its function is
 *   gone from the store, not otherwise, in the order of the calls between files; a file that defines another name, or
 *   files calling each other in a circle, are refused;
 * - two processes starting at once on one PostgreSQL apply each file once.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Sql, type Store } from '../../../runtime/store/connect.js';
import { readFunctionFiles } from '../../../runtime/store/function-files.js';
import { applyFunctions, functionsDir, migrate, migrationsDir } from '../../../runtime/store/migrate.js';
import { catalog } from '../../helpers/catalog.js';
import { commitOf } from '../../helpers/old-build.js';
import {
  createTestDatabase,
  openTestStore,
  STORE_KINDS,
  type StoreKind,
  type TestStore,
} from '../../helpers/postgres.js';
import { ROOT } from '../../helpers/server-process.js';

/** The last main whose numbered migrations defined the functions themselves (001-017): the released one. */
const OLD_MAIN = 'e8a27f0';
/** The main before migrations 015-017 (test/runtime/log-upgrade.test.ts upgrades a store of it holding data). */
const PARTITIONS_MAIN = 'f282b88';
/** The first main with runtime/store/functions/ (the merge of issue 37's first round). */
const FILES_MAIN = '7a906fe';

/** `create [or replace] function <name>(`, as runtime/store/function-files.ts reads a definition. */
const DEFINITION = /\bcreate\s+(?:or\s+replace\s+)?function\s+([A-Za-z0-9_."]+)\s*\(/gi;

/** The functions `text` defines (a .sql file's `--` comments left out), lowercased and unquoted. */
function definedIn(file: string, text: string): string[] {
  const code = file.endsWith('.sql') ? text.replace(/--[^\n]*/g, '') : text;
  return [...code.matchAll(DEFINITION)].map((m) =>
    m[1]!
      .replace(/"/g, '')
      .replace(/^public\./i, '')
      .toLowerCase(),
  );
}

/** The package's code and SQL under git (the folders it ships and runs): runtime, compiler, clients, ... */
function packageSources(): string[] {
  return execFileSync('git', ['ls-files', '*.ts', '*.js', '*.mjs', '*.sql'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /^(runtime|compiler|clients|permit-verifier|webhook-receiver|bin|scripts|examples)\//.test(f));
}

const FUNCTION_NAMES = readdirSync(functionsDir())
  .filter((f) => f.endsWith('.sql'))
  .map((f) => f.slice(0, -4))
  .sort();

/**
 * `ref`'s runtime/store/migrations and, when it has them, its function files,
 * written into `<dir>/migrations` and `<dir>/functions` (where a migration's
 * `\ir ../functions/<name>.sql` finds them).
 */
function oldTree(dir: string, ref: string): { migrations: string; functions: string | null } {
  const commit = commitOf(ref);
  const git = (args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 16 << 20 });
  const copy = (folder: 'migrations' | 'functions'): string | null => {
    const paths = git(['ls-tree', '--name-only', commit, `runtime/store/${folder}/`]).trim();
    if (paths === '') return null;
    const out = join(dir, folder);
    mkdirSync(out);
    for (const path of paths.split('\n'))
      writeFileSync(join(out, path.split('/').pop()!), git(['show', `${commit}:${path}`]));
    return out;
  };
  return { migrations: copy('migrations')!, functions: copy('functions') };
}

async function scratchStore(kind: StoreKind): Promise<{ store: Store; dispose(): Promise<void> }> {
  if (kind === 'embedded') {
    const store = await openStore({ dataDir: 'memory://' });
    return { store, dispose: () => store.close() };
  }
  const db = await createTestDatabase();
  const store = await openStore({ databaseUrl: db.url, max: 2 });
  return {
    store,
    async dispose() {
      await store.close();
      await db.drop();
    },
  };
}

describe("one file per SQL function (the package's files)", () => {
  it('no numbered migration defines a function; each function file defines its own name', () => {
    for (const name of readdirSync(migrationsDir())) {
      const text = readFileSync(join(migrationsDir(), name), 'utf8').replace(/--[^\n]*/g, '');
      expect(text, name).not.toMatch(/\bcreate\s+(or\s+replace\s+)?function\b/i);
    }
    const files = readFunctionFiles(functionsDir());
    expect(files.map((f) => f.name).sort()).toEqual(FUNCTION_NAMES);
  });

  it('defines each function once: in its own file, nowhere else in the code and SQL of the package', () => {
    const sources = packageSources();
    expect(sources).toContain('runtime/store/migrations/016_budget_scopes.sql');
    expect(sources).toContain('runtime/store/limits.ts');
    const definitions = sources.flatMap((file) =>
      definedIn(file, readFileSync(join(ROOT, file), 'utf8')).map((name) => ({ name, file })),
    );
    // Anywhere but runtime/store/functions/<name>.sql is a second definition (or one the runner never applies).
    expect(definitions.filter((d) => d.file !== `runtime/store/functions/${d.name}.sql`)).toEqual([]);
    expect(definitions.map((d) => d.name).sort()).toEqual(FUNCTION_NAMES);
  });

  it('finds a definition in SQL and in a TypeScript string, not in a comment or in prose', () => {
    expect(
      definedIn(
        'x.sql',
        '-- create function authz_old(x int)\nCREATE OR REPLACE FUNCTION public."authz_apply_limits" (batch jsonb)',
      ),
    ).toEqual(['authz_apply_limits']);
    expect(
      definedIn('x.ts', 'await tx.unsafe(`create function authz_usage_json(u budget_usage) returns jsonb ...`);'),
    ).toEqual(['authz_usage_json']);
    expect(
      definedIn(
        'x.ts',
        '/** one `create or replace function <name>(...)` each */ const s = `create or replace function ${name}(...)`;',
      ),
    ).toEqual([]);
  });

  it('orders a function after those it calls', () => {
    const order = readFunctionFiles(functionsDir()).map((f) => f.name);
    expect(order.indexOf('authz_id_time')).toBeLessThan(order.indexOf('authz_id_floor'));
    expect(order.indexOf('authz_id_floor')).toBeLessThan(order.indexOf('authz_create_log_partition'));
    expect(order.indexOf('authz_usage_json')).toBeLessThan(order.indexOf('authz_apply_limits'));
    expect(order.indexOf('authz_budget_events')).toBeLessThan(order.indexOf('authz_apply_limits'));
  });
});

describe.each(STORE_KINDS)('function files (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(() => store?.dispose());

  it('every function of a migrated store has its file, recorded with its hash', async () => {
    // One row per signature: a name twice would be an old signature left beside the file's.
    const procs = await store.sql<Array<{ name: string }>>`
      select proname as name from pg_proc where pronamespace = 'public'::regnamespace order by 1`;
    expect(procs.map((p) => p.name)).toEqual(FUNCTION_NAMES);
    const rows = await store.sql<
      Array<{ name: string; sha256: string }>
    >`select name, sha256 from schema_functions order by name`;
    expect(rows).toEqual(
      readFunctionFiles(functionsDir())
        .map((f) => ({ name: f.name, sha256: f.hash }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    );
    // Nothing changed since: a second run applies none.
    expect(await applyFunctions(store.sql, functionsDir())).toEqual([]);
  });

  it.each([
    [OLD_MAIN, '017_event_references.sql', false],
    [PARTITIONS_MAIN, '014_shadow.sql', false],
    [FILES_MAIN, '018_agent_attributes.sql', true],
  ])(
    "a fresh store has the schema of one migrated by %s's migrations (up to %s) and then upgraded",
    async (ref, last, withFiles) => {
      const dir = mkdtempSync(join(tmpdir(), 'authz-old-migrations-'));
      const old = await scratchStore(kind);
      try {
        const tree = oldTree(dir, ref);
        expect(tree.functions !== null).toBe(withFiles);
        const applied = await migrate(old.store.sql, { dir: tree.migrations, functionsDir: tree.functions });
        expect(applied.at(-1)).toBe(last);
        // The old migrations' own function bodies, which the upgrade must replace.
        const before = await catalog(old.store.sql);
        expect(Object.keys(before.functions)).toContain(
          'authz_apply_limits(batch jsonb, now_ms double precision, rate_offset_ms double precision)',
        );
        // The current build starts on it: later migrations, then every function file.
        await migrate(old.store.sql);
        const upgraded = await catalog(old.store.sql);
        const fresh = await catalog(store.sql);
        expect(Object.keys(fresh.functions).length).toBe(FUNCTION_NAMES.length);
        expect(before.functions).not.toEqual(fresh.functions);
        expect(upgraded).toEqual(fresh);
        // And it records the files it holds, as a fresh store does: nothing is applied again at the next start.
        const recorded = (sql: Sql) =>
          sql<Array<{ name: string; sha256: string }>>`select name, sha256 from schema_functions order by name`;
        expect(await recorded(old.store.sql)).toEqual(await recorded(store.sql));
      } finally {
        await old.dispose();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  describe('a folder of function files', () => {
    let dir: string;
    let migrations: string;
    let functions: string;
    let scratch: Awaited<ReturnType<typeof scratchStore>>;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'authz-functions-'));
      migrations = join(dir, 'migrations');
      functions = join(dir, 'functions');
      mkdirSync(migrations);
      mkdirSync(functions);
      writeFileSync(join(migrations, '001_t.sql'), 'create table t_items (n int);\n');
      scratch = await scratchStore(kind);
    });
    afterAll(async () => {
      await scratch?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });
    const call = async (query: string) =>
      ((await scratch.store.sql.unsafe(query)) as unknown as Array<{ v: unknown }>)[0]!.v;

    it('applies them after the migrations, callee first; again only those whose text changed', async () => {
      // t_double (SQL: checked at creation) calls t_base: t_base must exist first, though it sorts after.
      writeFileSync(
        join(functions, 't_double.sql'),
        '-- Twice t_base.\ncreate or replace function t_double(x int) returns int language sql as $$ select t_base(x) * 2 $$;\n',
      );
      writeFileSync(
        join(functions, 't_base.sql'),
        'create or replace function t_base(x int) returns int language sql as $$ select x + 1 $$;\n',
      );
      writeFileSync(join(functions, 'notes.txt'), 'not a function file');
      expect(readFunctionFiles(functions).map((f) => f.name)).toEqual(['t_base', 't_double']);
      expect(await migrate(scratch.store.sql, { dir: migrations, functionsDir: functions })).toEqual(['001_t.sql']);
      expect(await call('select t_double(1) as v')).toBe(4);
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual([]);

      writeFileSync(
        join(functions, 't_base.sql'),
        'create or replace function t_base(x int) returns int language sql as $$ select x + 10 $$;\n',
      );
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual(['t_base']);
      expect(await call('select t_double(1) as v')).toBe(22);
      // A comment is text too: applied again (harmless), then settled.
      writeFileSync(
        join(functions, 't_double.sql'),
        '-- Twice t_base, said otherwise.\ncreate or replace function t_double(x int) returns int language sql as $$ select t_base(x) * 2 $$;\n',
      );
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual(['t_double']);
      expect(await migrate(scratch.store.sql, { dir: migrations, functionsDir: functions })).toEqual([]);
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual([]);
    });

    it('applies again a function gone from the store though its file is unchanged', async () => {
      await scratch.store.sql.unsafe('drop function t_double(int)');
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual(['t_double']);
      expect(await call('select t_double(1) as v')).toBe(22);
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual([]);
    });

    it('a migration includes a function file it needs while it runs', async () => {
      writeFileSync(
        join(migrations, '002_uses.sql'),
        'create table t_more (n int);\n\\ir ../functions/t_base.sql\ninsert into t_more values (t_base(1));\n',
      );
      expect(await migrate(scratch.store.sql, { dir: migrations, functionsDir: functions })).toEqual(['002_uses.sql']);
      expect(await call('select n as v from t_more')).toBe(11);
    });

    it('forgets a file removed (its function dropped by a migration)', async () => {
      writeFileSync(
        join(functions, 't_gone.sql'),
        'create or replace function t_gone() returns int language sql as $$ select 1 $$;\n',
      );
      expect(await applyFunctions(scratch.store.sql, functions)).toEqual(['t_gone']);
      rmSync(join(functions, 't_gone.sql'));
      writeFileSync(join(migrations, '003_drop.sql'), 'drop function t_gone();\n');
      expect(await migrate(scratch.store.sql, { dir: migrations, functionsDir: functions })).toEqual(['003_drop.sql']);
      const names = await scratch.store.sql<Array<{ name: string }>>`select name from schema_functions order by name`;
      expect(names.map((r) => r.name)).toEqual(['t_base', 't_double']);
    });

    it('refuses a file that defines another name, or more than one function, and calls in a circle', async () => {
      const bad = join(dir, 'bad');
      mkdirSync(bad);
      writeFileSync(
        join(bad, 't_one.sql'),
        'create or replace function t_two() returns int language sql as $$ select 1 $$;\n',
      );
      expect(() => readFunctionFiles(bad)).toThrow(
        /t_one\.sql must hold one statement "create or replace function t_one/,
      );
      writeFileSync(join(bad, 't_one.sql'), 'create function t_one() returns int language sql as $$ select 1 $$;\n');
      expect(() => readFunctionFiles(bad)).toThrow(/must hold one statement/);
      writeFileSync(
        join(bad, 't_one.sql'),
        'create or replace function t_one() returns int language plpgsql as $$ begin return t_two(); end $$;\n',
      );
      writeFileSync(
        join(bad, 't_two.sql'),
        'create or replace function t_two() returns int language plpgsql as $$ begin return t_one(); end $$;\n',
      );
      expect(() => readFunctionFiles(bad)).toThrow(/in a circle: t_one -> t_two; t_two -> t_one/);
      // A failing file applies nothing of its batch.
      const failing = join(dir, 'failing');
      mkdirSync(failing);
      writeFileSync(
        join(failing, 't_a.sql'),
        'create or replace function t_a() returns int language sql as $$ select 1 $$;\n',
      );
      writeFileSync(
        join(failing, 't_b.sql'),
        'create or replace function t_b() returns int language sql as $$ select * from t_no_such_table $$;\n',
      );
      await expect(applyFunctions(scratch.store.sql, failing)).rejects.toThrow(/t_no_such_table/);
      expect(await call(`select to_regproc('t_a')::text as v`)).toBeNull();
    });
  });
});

describe('postgres: two processes start at once', () => {
  it('each function file is applied by one of them', async () => {
    const db = await createTestDatabase();
    const a = await openStore({ databaseUrl: db.url, max: 2 });
    const b = await openStore({ databaseUrl: db.url, max: 2 });
    try {
      await migrate(a.sql, { functionsDir: null });
      const [ra, rb] = await Promise.all([
        applyFunctions(a.sql, functionsDir()),
        applyFunctions(b.sql, functionsDir()),
      ]);
      expect([...ra, ...rb].sort()).toEqual(FUNCTION_NAMES);
      // And a start that finds them applied returns once they are.
      const [ma, mb] = await Promise.all([migrate(a.sql), migrate(b.sql)]);
      expect([...ma, ...mb]).toEqual([]);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
