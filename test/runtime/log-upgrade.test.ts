/**
 * Upgrade in place (issue 23): a store made and filled by the released main
 * (OLD_MAIN, before migrations 015 decision log partitions, 016 budget scopes
 * and 017 event references) is opened by the current build, which migrates it
 * at start; nothing written before reads differently after, on both stores.
 *
 * Both builds are real `authz serve` processes (the old one built from git
 * history by test/helpers/old-build.ts) on one store, driven over HTTP only:
 * an account and keys (operator API), allow, deny, review and budget policies,
 * a webhook endpoint that refuses connections (deliveries stay pending with
 * attempts), decisions over three days of the test clock, a review verdict and
 * a held budget. The one row the old API cannot make, a decision with an id
 * from before time-sortable ids (migration 008), is written with SQL.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idTime } from '../../runtime/ids.js';
import { openStore, type Store, type StoreOptions } from '../../runtime/store/connect.js';
import { oldBuild } from '../helpers/old-build.js';
import { createTestDatabase, STORE_KINDS, type StoreKind } from '../helpers/postgres.js';
import {
  ensureBuilt,
  freePort,
  HOST,
  request,
  startServeProcess,
  stopServer,
  type ServeProcess,
} from '../helpers/server-process.js';
import type { JsonObject } from '../helpers/json.js';

/**
 * The main every existing store was made by: the last commit before this
 * round's migrations 015, 016 and 017 (its newest migration is 014_shadow.sql).
 */
const OLD_MAIN = 'f282b88';

const ADMIN_TOKEN = 'admin-token-for-log-upgrade-0123456789';
const MIGRATIONS = fileURLToPath(new URL('../../runtime/store/migrations/', import.meta.url));
/** Fixed: both builds open the webhook secret the old one sealed. */
const MASTER_KEY = 'master-key-for-log-upgrade-0123456789abcdef';
/** Nothing listens there (a privileged port, never handed out as a free one): every attempt is refused. */
const REFUSING_URL = 'http://127.0.0.1:9/hooks';
const LEGACY_ID = 'dec_q9ZLegacyIdOf24RandomX';
const DAY_S = 86_400;

type Json = JsonObject;

/** Where the store lives, how a serve process finds it, and how the test opens it with SQL (serve stopped). */
interface Location {
  env: NodeJS.ProcessEnv;
  options: StoreOptions;
  remove(): Promise<void>;
}

async function newLocation(kind: StoreKind): Promise<Location> {
  if (kind === 'postgres') {
    const db = await createTestDatabase();
    return { env: { DATABASE_URL: db.url }, options: { databaseUrl: db.url, max: 2 }, remove: () => db.drop() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'authz-upgrade-'));
  const dataDir = join(dir, 'data');
  return {
    env: { DATABASE_URL: '', AUTHZ_DATA_DIR: dataDir },
    options: { dataDir },
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs `f` on the store, opened by the current code (for the embedded store: only while no serve has it open). */
async function withStore<T>(location: Location, f: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(location.options);
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}

/** Polls `probe` (every 100 ms, at most `tries` times) until it returns a value that is not undefined. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const out = await probe();
    if (out !== undefined) return out;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** `YYYYMMDD` of the UTC day of `ms`. */
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10).replace(/-/g, '');

/** The partition an id of the log belongs in: its day's, or the default one for an id that carries no time. */
function partitionOf(table: string, id: string): string {
  const at = idTime(id);
  return at === null ? `${table}_default` : `${table}_p${dayOf(at)}`;
}

describe.each(STORE_KINDS)('upgrade in place from the released main (%s store)', (kind) => {
  let oldBin: string;
  let location: Location | undefined;
  let running: ServeProcess | undefined;

  beforeAll(() => {
    // Cached across runs (test/helpers/old-build.ts); the first build takes a minute or two.
    oldBin = join(oldBuild(OLD_MAIN), 'bin', 'authz.js');
    ensureBuilt();
  }, 600_000);

  afterAll(async () => {
    if (running) await stopServer(running);
    await location?.remove();
  }, 60_000);

  /** `authz serve` of the given build (default: the current one) on the store; its base URL. */
  async function serve(bin?: string): Promise<string> {
    const port = await freePort();
    const env = {
      ...location!.env,
      AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
      AUTHZ_TEST_CLOCK: '1',
      AUTHZ_WEBHOOK_ALLOW_PRIVATE: '1',
      AUTHZ_MASTER_KEY: MASTER_KEY,
    };
    running = await startServeProcess(port, env, 120_000, bin);
    return `http://${HOST}:${port}`;
  }

  async function stop(): Promise<void> {
    const p = running!;
    running = undefined;
    await stopServer(p);
    expect(await p.exited).toEqual({ code: 0, signal: null });
  }

  it('a store made by the released main, with data, migrates at the start of the current build and reads the same', async () => {
    location = await newLocation(kind);

    // --- Phase 1: the released main makes the store and fills it over HTTP ---------------------------------
    let base = await serve(oldBin);
    const call = async (token: string, method: string, path: string, body?: unknown): Promise<Json> => {
      const r = await request(base, token, method, path, body);
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    /** Moves the test clock on (0: reads it); its time in ms. */
    const advance = async (seconds: number) =>
      Date.parse((await call(ADMIN_TOKEN, 'POST', '/admin/clock', { advance_seconds: seconds })).now);

    const account = await call(ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'upgrade' });
    const key = (
      await call(ADMIN_TOKEN, 'POST', `/admin/accounts/${account.id}/api-keys`, { environment: 'test', scopes: ['*'] })
    ).key as string;
    // Another key than the one that asks (self-review is refused).
    const reviewer = (
      await call(ADMIN_TOKEN, 'POST', `/admin/accounts/${account.id}/api-keys`, {
        environment: 'test',
        scopes: ['reviews:read', 'reviews:write'],
      })
    ).key as string;
    for (const policy of [
      { name: 'read', effect: 'allow', actions: ['orders.read'] },
      { name: 'no-deletes', effect: 'deny', actions: ['orders.delete'] },
      { name: 'refunds', effect: 'review', actions: ['payments.refund'] },
      {
        name: 'charges',
        effect: 'allow',
        actions: ['payments.charge'],
        budget: { unit: 'USD', limit: 100, period: 'yearly' },
      },
    ]) {
      await call(key, 'POST', '/v1/policies', policy);
    }
    const hook = await call(key, 'POST', '/v1/webhooks', { url: REFUSING_URL, events: ['*'] });
    const decide = (body: Json) => call(key, 'POST', '/v1/decisions', body);

    const made: string[] = [];
    // Three days of decisions (three day partitions after the upgrade). The last day's live an hour, so none
    // changes status (pending, then expired) while the test reads.
    for (let d = 0; d < 3; d++) {
      const ttl = d === 2 ? { ttl_seconds: 3600 } : {};
      made.push((await decide({ agent_id: 'up-a', action: 'orders.read', session_id: `s${d}`, ...ttl })).id);
      made.push((await decide({ agent_id: 'up-b', action: 'orders.delete', ...ttl })).id);
      if (d < 2) await advance(DAY_S);
    }
    const refund = await decide({ agent_id: 'up-c', action: 'payments.refund', ttl_seconds: 3600 });
    expect(refund.effect).toBe('review');
    made.push(refund.id);
    expect(
      (await call(reviewer, 'POST', `/v1/decisions/${refund.id}/review`, { verdict: 'approve', reviewer: 'alice' }))
        .review,
    ).toMatchObject({ status: 'approved' });
    const charge = await decide({ agent_id: 'up-d', action: 'payments.charge', amount: 40, ttl_seconds: 3600 });
    expect(charge.effect).toBe('allow');
    made.push(charge.id);

    // Let every delivery settle: once each has had its first attempt, the clock moves past the first retry
    // (30 s after it); after that second attempt no retry is due for minutes (5 min and more) and none is in flight.
    const deliveries = async () =>
      (await call(key, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).data as Json[];
    await until('a first attempt at every delivery', async () => {
      const list = await deliveries();
      return list.length >= made.length && list.every((d) => d.attempt >= 1) ? list : undefined;
    });
    await advance(600);
    const settled = await until('a second attempt at every delivery, none due', async () => {
      const now = await advance(0);
      const list = await deliveries();
      return list.every((d) => d.status === 'pending' && d.attempt >= 2 && Date.parse(d.next_attempt_at) > now)
        ? list
        : undefined;
    });
    expect(settled.every((d) => d.attempts.every((a: Json) => a.status_code === null && a.error))).toBe(true);
    await stop();

    // What the old API cannot make: a decision stored before ids sorted by time (migration 008), 24 random characters.
    const firstAt = await withStore(location, async (store) => {
      // The store is the released main's: migrations up to 014, no partitions.
      const applied = await store.sql<Array<{ name: string }>>`select name from schema_migrations order by name`;
      expect(applied.at(-1)!.name).toBe('014_shadow.sql');
      expect((await store.sql`select count(*)::int as n from pg_inherits`)[0]!.n).toBe(0);
      const first = (await store.sql<Array<{ t: Date }>>`select min(evaluated_at) as t from decisions`)[0]!.t.getTime();
      await store.sql`
        insert into decisions (account_id, environment, id, agent_id, action, effect, reason, policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds)
        values (${account.id}, 'test', ${LEGACY_ID}, 'up-a', 'orders.read', 'allow', 'policy.matched', null, '{}', '[]', 'pending',
                ${new Date(first - 3_600_000)}, ${new Date(first - 3_300_000)}, 300)`;
      return first;
    });
    made.push(LEGACY_ID);

    // The released main reads it all back, the legacy decision included.
    base = await serve(oldBin);
    const read = async () => ({
      decisions: await Promise.all(made.map((id) => call(key, 'GET', `/v1/decisions/${id}`))),
      byAgent: (await call(key, 'GET', '/v1/decisions?agent_id=up-a&limit=100')).data as Json[],
      list: (await call(key, 'GET', '/v1/decisions?limit=100')).data as Json[],
      events: (await call(key, 'GET', '/v1/events?limit=100')).data as Json[],
      endpoint: await call(key, 'GET', `/v1/webhooks/${hook.id}`),
      deliveries: (await call(key, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).data as Json[],
      reviews: (await call(key, 'GET', '/v1/reviews?status=approved')).data as Json[],
      budgets: (await call(key, 'GET', '/v1/budgets?agent_id=up-d')).data as Json[],
      policies: (await call(key, 'GET', '/v1/policies?limit=100')).data as Json[],
    });
    const before = await read();
    expect(before.decisions.map((d) => d.id)).toEqual(made);
    expect(before.decisions.find((d) => d.id === LEGACY_ID)).toMatchObject({ effect: 'allow', status: 'expired' });
    expect(before.byAgent).toHaveLength(4);
    expect(before.list).toHaveLength(made.length);
    expect(before.events.length).toBeGreaterThanOrEqual(made.length - 1);
    expect(before.deliveries).toEqual(settled);
    expect(before.reviews).toEqual([expect.objectContaining({ id: refund.id })]);
    expect(before.budgets).toEqual([expect.objectContaining({ held: 40 })]);
    expect(before.policies).toHaveLength(4);
    await stop();

    // --- Phase 2: the current build on the same store migrates it at start -----------------------------------
    base = await serve();
    const after = await read();
    // The new code may answer more fields; nothing it answered before is lost or changed.
    expect(after).toMatchObject(before);
    // The export answers every decision, the legacy one included, as GET does.
    const since = new Date(firstAt - 2 * DAY_S * 1000).toISOString();
    const exported = (await request(base, key, 'GET', `/v1/decisions/export?since=${since}`)).body.raw as string;
    const lines = exported
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    expect(lines.map((l) => l.id).sort()).toEqual([...made].sort());
    for (const line of lines) expect(line).toEqual(after.decisions.find((d) => d.id === line.id));

    // New decisions, events and deliveries still go in, and the held budget settles.
    const fresh = await decide({ agent_id: 'up-a', action: 'orders.read' });
    expect(fresh.effect).toBe('allow');
    const freshEvent = await until("the new decision's event", async () =>
      ((await call(key, 'GET', '/v1/events?limit=100')).data as Json[]).find((e) => e.data?.decision?.id === fresh.id),
    );
    const freshDelivery = await until("an attempt at the new event's delivery", async () =>
      ((await call(key, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).data as Json[]).find(
        (d) => d.event_id === freshEvent.id && d.attempt >= 1,
      ),
    );
    expect(freshDelivery).toMatchObject({ status: 'pending', status_code: null });
    expect((await call(key, 'GET', '/v1/decisions?agent_id=up-a&limit=100')).data).toHaveLength(5);
    expect((await call(key, 'POST', `/v1/decisions/${charge.id}/confirm`, { amount: 40 })).status).toBe('confirmed');
    expect((await call(key, 'GET', '/v1/budgets?agent_id=up-d')).data).toEqual([
      expect.objectContaining({ consumed: 40, held: 0 }),
    ]);
    await stop();

    // The rows sit in their days' partitions; the legacy decision in the default one.
    await withStore(location, async (store) => {
      const applied = (await store.sql<Array<{ name: string }>>`select name from schema_migrations order by name`).map(
        (r) => r.name,
      );
      // Every migration of this build, those after the released main's 014 included (whatever their number).
      expect(applied).toEqual(
        readdirSync(MIGRATIONS)
          .filter((name) => name.endsWith('.sql'))
          .sort(),
      );
      expect(applied).toEqual(expect.arrayContaining(['017_event_references.sql', '025_derived_decision_events.sql']));
      for (const table of ['decisions', 'events', 'webhook_deliveries'] as const) {
        const rows = await store.sql<
          Array<{ id: string; p: string }>
        >`select id, tableoid::regclass::text as p from ${store.sql(table)}`;
        expect(rows.length).toBeGreaterThanOrEqual(made.length);
        for (const row of rows) expect(`${row.id}: ${row.p}`).toBe(`${row.id}: ${partitionOf(table, row.id)}`);
      }
      const attempts = await store.sql<
        Array<{ id: string; p: string }>
      >`select delivery_id as id, tableoid::regclass::text as p from webhook_attempts`;
      expect(attempts.length).toBeGreaterThan(settled.length);
      for (const row of attempts)
        expect(`${row.id}: ${row.p}`).toBe(`${row.id}: ${partitionOf('webhook_attempts', row.id)}`);
      const days = new Set(
        (await store.sql<Array<{ p: string }>>`select distinct tableoid::regclass::text as p from decisions`).map(
          (r) => r.p,
        ),
      );
      expect(days.has('decisions_default')).toBe(true);
      expect([...days].filter((p) => p !== 'decisions_default').length).toBeGreaterThanOrEqual(3);
    });
  }, 300_000);
});
