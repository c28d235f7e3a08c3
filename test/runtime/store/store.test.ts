/**
 * The storage layer on both kinds of store: migrations, transactions, type
 * mapping; plus embedded persistence and concurrent migration on PostgreSQL.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../runtime/store/connect.js';
import { migrate, migrationsDir } from '../../../runtime/store/migrate.js';
import { createTestDatabase, openTestStore, STORE_KINDS, type TestStore } from '../../helpers/postgres.js';

const ALL_MIGRATIONS = readdirSync(migrationsDir())
  .filter((f) => /^\d{3}_.*\.sql$/.test(f))
  .sort();

const T0 = new Date('2026-01-02T03:04:05.678Z');

describe.each(STORE_KINDS)('%s store', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.dispose();
  });

  it('reports its kind and LISTEN support', () => {
    expect(store.kind).toBe(kind);
    expect(store.supportsListen).toBe(kind === 'postgres');
  });

  it('records every migration once; a second run applies nothing', async () => {
    const rows = await store.sql<
      { name: string; applied_at: Date }[]
    >`select name, applied_at from schema_migrations order by name`;
    expect(rows.map((r) => r.name)).toEqual(ALL_MIGRATIONS);
    expect(rows[0]!.applied_at).toBeInstanceOf(Date);
    expect(await migrate(store.sql)).toEqual([]);
    const [{ n }] = await store.sql<{ n: number }[]>`select count(*) as n from schema_migrations`;
    expect(n).toBe(ALL_MIGRATIONS.length);
  });

  it('creates the tables', async () => {
    const rows = await store.sql<{ table_name: string }[]>`
      select table_name from information_schema.tables where table_schema = 'public' order by table_name`;
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining([
        'accounts',
        'agents',
        'api_keys',
        'decisions',
        'events',
        'policies',
        'policy_sets',
        'schema_migrations',
      ]),
    );
  });

  it('rolls a transaction back on error, leaving nothing half-written', async () => {
    await expect(
      store.sql.begin(async (tx) => {
        await tx`insert into accounts (id, name, created_at) values ('acc_rb', 'Rollback', ${T0})`;
        // Violates the foreign key: no account acc_missing.
        await tx`insert into policy_sets (account_id, environment, version, updated_at) values ('acc_missing', 'test', 0, ${T0})`;
      }),
    ).rejects.toThrow();
    expect(await store.sql`select id from accounts where id = 'acc_rb'`).toHaveLength(0);

    await expect(
      store.sql.begin(async (tx) => {
        await tx`insert into accounts (id, name, created_at) values ('acc_rb2', 'Rollback', ${T0})`;
        throw new Error('application error');
      }),
    ).rejects.toThrow('application error');
    expect(await store.sql`select id from accounts where id = 'acc_rb2'`).toHaveLength(0);

    // The connection is usable afterwards.
    const [{ ok }] = await store.sql<{ ok: number }[]>`select 1 as ok`;
    expect(ok).toBe(1);
  });

  it('inserts many rows at once; seq is a number, timestamptz a Date, jsonb/arrays/doubles parsed', async () => {
    await store.sql`insert into accounts (id, name, created_at) values ('acc_multi', 'Multi', ${T0})`;
    const rows = Array.from({ length: 5 }, (_, i) => ({
      account_id: 'acc_multi',
      environment: 'test',
      id: `dec_${i}`,
      agent_id: 'agent_1',
      action: 'payments.send',
      resource: null,
      amount: 12.5 + i,
      context: store.sql.json({ i, nested: { ok: true } }),
      effect: 'allow',
      reason: 'policy',
      policy_id: 'pol_1',
      matched_policy_ids: ['pol_1', 'pol_2'],
      warnings: store.sql.json([]),
      status: 'confirmed',
      evaluated_at: new Date(T0.getTime() + i * 1000),
      expires_at: new Date(T0.getTime() + 60_000),
      ttl_seconds: 60,
    }));
    await store.sql`insert into decisions ${store.sql(rows)}`;

    const got = await store.sql<
      {
        id: string;
        seq: number;
        amount: number;
        context: { i: number; nested: { ok: boolean } };
        matched_policy_ids: string[];
        warnings: unknown[];
        evaluated_at: Date;
        resource: string | null;
      }[]
    >`select id, seq, amount, context, matched_policy_ids, warnings, evaluated_at, resource
      from decisions where account_id = 'acc_multi' order by seq`;
    expect(got.map((r) => r.id)).toEqual(['dec_0', 'dec_1', 'dec_2', 'dec_3', 'dec_4']);
    for (const [i, r] of got.entries()) {
      expect(typeof r.seq).toBe('number');
      expect(r.amount).toBe(12.5 + i);
      expect(r.context).toEqual({ i, nested: { ok: true } });
      expect(r.matched_policy_ids).toEqual(['pol_1', 'pol_2']);
      expect(r.warnings).toEqual([]);
      expect(r.evaluated_at).toBeInstanceOf(Date);
      expect(r.evaluated_at.getTime()).toBe(T0.getTime() + i * 1000);
      expect(r.resource).toBeNull();
    }
    expect(got[4]!.seq - got[0]!.seq).toBe(4);

    // bigint parameters and results, count(*) included.
    const [{ n, v }] = await store.sql<{ n: number; v: number }[]>`
      select count(*) as n, ${got[0]!.seq}::bigint + 1 as v from decisions where account_id = 'acc_multi'`;
    expect(n).toBe(5);
    expect(v).toBe(got[0]!.seq + 1);
    const [after] = await store.sql<
      { seq: number }[]
    >`select seq from decisions where seq > ${got[3]!.seq} and account_id = 'acc_multi'`;
    expect(after!.seq).toBe(got[4]!.seq);
  });

  it('stores and reads bytea and text[]', async () => {
    await store.sql`insert into accounts (id, name, created_at) values ('acc_keys', 'Keys', ${T0})`;
    const hash = Buffer.from('00ff10ab', 'hex');
    await store.sql`insert into api_keys (id, account_id, environment, key_hash, key_prefix, scopes, created_at)
                    values ('key_1', 'acc_keys', 'live', ${hash}, 'svc_live_sk_Ab', ${['decide', 'admin']}, ${T0})`;
    const [row] = await store.sql<{ key_hash: Buffer; scopes: string[]; revoked_at: Date | null; created_at: Date }[]>`
      select key_hash, scopes, revoked_at, created_at from api_keys where key_hash = ${hash}`;
    expect(Buffer.compare(row!.key_hash, hash)).toBe(0);
    expect(row!.scopes).toEqual(['decide', 'admin']);
    expect(row!.revoked_at).toBeNull();
    expect(row!.created_at.toISOString()).toBe(T0.toISOString());
  });

  it('rolls back a failing migration file together with its record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-mig-'));
    try {
      writeFileSync(join(dir, '001_ok.sql'), 'create table mig_ok (x int);\ninsert into mig_ok values (1);\n');
      writeFileSync(join(dir, '002_bad.sql'), 'create table mig_bad (x int);\nselect * from no_such_table;\n');
      writeFileSync(join(dir, 'notes.txt'), 'ignored');
      await expect(migrate(store.sql, { dir })).rejects.toThrow(/no_such_table/);
      const names = (await store.sql<{ name: string }[]>`select name from schema_migrations`).map((r) => r.name);
      expect(names).toContain('001_ok.sql');
      expect(names).not.toContain('002_bad.sql');
      const [{ bad }] = await store.sql<{ bad: string | null }[]>`select to_regclass('mig_bad')::text as bad`;
      expect(bad).toBeNull();
      writeFileSync(join(dir, '002_bad.sql'), 'create table mig_bad (x int);\n');
      expect(await migrate(store.sql, { dir })).toEqual(['002_bad.sql']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embedded store on disk', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authz-embedded-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its data across close and reopen', async () => {
    const dataDir = join(dir, 'nested', 'data');
    const first = await openStore({ dataDir });
    expect(first.kind).toBe('embedded');
    expect(await migrate(first.sql)).toEqual(ALL_MIGRATIONS);
    await first.sql`insert into accounts (id, name, created_at) values ('acc_disk', 'On disk', ${T0})`;
    await first.close();
    await first.close(); // idempotent

    const second = await openStore({ dataDir });
    try {
      expect(await migrate(second.sql)).toEqual([]);
      const rows = await second.sql<{ id: string; created_at: Date }[]>`select id, created_at from accounts`;
      expect(rows).toEqual([{ id: 'acc_disk', created_at: T0 }]);
    } finally {
      await second.close();
    }
  });
});

describe('postgres: concurrent start and connection handling', () => {
  it('applies each migration once when two processes migrate at once', async () => {
    const db = await createTestDatabase();
    const a = await openStore({ databaseUrl: db.url, max: 2 });
    const b = await openStore({ databaseUrl: db.url, max: 2 });
    try {
      const [ra, rb] = await Promise.all([migrate(a.sql), migrate(b.sql)]);
      expect([...ra, ...rb].sort()).toEqual(ALL_MIGRATIONS);
      const rows = await a.sql<{ name: string }[]>`select name from schema_migrations order by name`;
      expect(rows.map((r) => r.name)).toEqual(ALL_MIGRATIONS);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  });

  it('close() is idempotent and fails fast on a bad URL', async () => {
    const db = await createTestDatabase();
    const store = await openStore({ databaseUrl: db.url });
    await Promise.all([store.close(), store.close()]);
    await db.drop();
    const bad = new URL(db.url);
    bad.pathname = '/t_does_not_exist';
    await expect(openStore({ databaseUrl: bad.toString() })).rejects.toThrow(/does not exist/);
  });
});
