/**
 * Fail closed: when the store cannot be reached, or an environment's stored
 * policies cannot be loaded, POST /v1/decisions answers 503 service.unavailable
 * (never an allow, never a 500), and decisions come back once the store does.
 *
 * The unreachable store is real: PostgreSQL behind a TCP forwarder that is cut
 * (refused connections, dropped sockets), backends killed with
 * pg_terminate_backend, and a database that refuses new connections
 * (ALLOW_CONNECTIONS false). The corrupt policy set is a row written with SQL
 * behind the API's back, on both stores.
 */
import type { LightMyRequestResponse } from 'fastify';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../runtime/domain/accounts.js';
import { openStore } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { createTestDatabase, pgAdminUrl, STORE_KINDS, type TestStore } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { json, START, startRuntime, type TestRuntime } from './helpers/app.js';
import { postDecision } from '../helpers/kit.js';

let seq = 0;
const agent = (tag: string) => `${tag}-${++seq}`;

function expectUnavailable(r: LightMyRequestResponse, what: string): void {
  expect(r.statusCode, `${what}: ${r.body}`).toBe(503);
  const body = json(r);
  expect(body.error.code, what).toBe('service.unavailable');
  expect(r.headers['retry-after'], `${what}: Retry-After`).toMatch(/^[1-9]\d*$/);
  expect(body.error.message.length, what).toBeGreaterThan(10);
  expect(body.error.request_id).toBe(r.headers['request-id']);
  expect(r.body).not.toContain('permit_token');
}

describe('fail closed: PostgreSQL unreachable', () => {
  let proxy: TcpProxy;
  let rt: TestRuntime;
  let db: { url: string; drop(): Promise<void> };
  let dbName: string;
  let admin: postgres.Sql;

  beforeAll(async () => {
    db = await createTestDatabase();
    const direct = new URL(db.url);
    dbName = direct.pathname.slice(1);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port));
    const viaProxy = new URL(db.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const store = await openStore({ databaseUrl: viaProxy.toString(), max: 3 });
    await migrate(store.sql);
    await createAccount(store.sql, 'main', new Date(START));
    const testStore: TestStore = Object.assign(store, { url: viaProxy.toString(), dispose: () => store.close() });
    // A short deadline: a store call that hangs (postgres.js can leave a query pending when a
    // connection is refused at start-up) still answers 503 within the test's time.
    rt = await startRuntime('postgres', { store: testStore, config: { decisionDeadlineMs: 1500 } });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    admin = postgres(pgAdminUrl(), { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await proxy?.start().catch(() => {});
    await admin?.unsafe(`alter database ${dbName} allow_connections true`).catch(() => {});
    await rt?.close();
    await rt?.store.close();
    await proxy?.close();
    await admin?.end({ timeout: 5 });
    await db?.drop();
  });

  const decide = (agentId: string) => postDecision(rt, { agent_id: agentId, action: 'orders.read' });
  /** Once the store is back, decisions return within a few reconnection attempts; until then every answer is 503. */
  const recovers = async () => {
    for (let i = 0; i < 50; i++) {
      const r = await decide(agent('recovering'));
      if (r.statusCode === 200) return expect(json(r).effect).toBe('allow');
      expectUnavailable(r, 'decision while reconnecting');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect.fail('decisions did not recover within 5 s of the store coming back');
  };
  const allowed = async (agentId: string) => {
    const r = await decide(agentId);
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r).effect).toBe('allow');
  };

  it('store cut off: 503 for new and known agents alike, readyz 503; back: allow again', async () => {
    const known = agent('known');
    await allowed(known);
    await proxy.stop();
    try {
      for (const a of [agent('new'), known, known])
        expectUnavailable(await decide(a), `decision for ${a} with the store cut off`);
      expectUnavailable(await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions' }), 'GET /v1/decisions');
      expectUnavailable(await rt.call(null, { method: 'GET', url: '/readyz' }), 'readyz');
    } finally {
      await proxy.start();
    }
    await recovers();
    await allowed(known);
    await allowed(agent('after'));
  });

  it('backends terminated: each answer is 200 or 503 (never 500), and decisions recover', async () => {
    await allowed(agent('before-kill'));
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${dbName} and pid <> pg_backend_pid()`;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await decide(agent('kill'));
      if (r.statusCode !== 200) expectUnavailable(r, 'decision after pg_terminate_backend');
      statuses.push(r.statusCode);
    }
    expect(statuses[statuses.length - 1]).toBe(200);
  });

  it('database refusing connections (ALLOW_CONNECTIONS false, backends terminated): 503; allowed again: recovers', async () => {
    await allowed(agent('before-refuse'));
    await admin.unsafe(`alter database ${dbName} allow_connections false`);
    try {
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${dbName} and pid <> pg_backend_pid()`;
      // Many refused requests in a row, each a failed connection attempt: every one answers 503
      // (with postgres.js's default reconnect backoff, up to 20 s, they queued past the test's timeout).
      for (let i = 0; i < 12; i++)
        expectUnavailable(await decide(agent('refused')), 'decision while the database refuses connections');
    } finally {
      await admin.unsafe(`alter database ${dbName} allow_connections true`);
    }
    await recovers();
    await allowed(agent('after-refuse'));
  });
});

describe.each(STORE_KINDS)('fail closed: stored policies that do not load (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }], 'live');
  });
  afterAll(() => rt?.close());

  const decideLive = () =>
    rt.call(rt.liveKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: agent('corrupt'), action: 'orders.read' },
    });

  /** Writes a policy row behind the API's back and makes this process load the set again. */
  async function corrupt(body: string): Promise<void> {
    await rt.store.sql.unsafe(
      `insert into policies (account_id, environment, id, body, created_at, updated_at) values ($1, 'live', 'pol_corrupt', $2::jsonb, now(), now())
       on conflict (account_id, environment, generation, id) do update set body = excluded.body`,
      [rt.accountId, body],
    );
    await rt.store
      .sql`update policy_sets set version = version + 1 where account_id = ${rt.accountId} and environment = 'live'`;
    rt.services.policySets.clear();
  }

  for (const [name, body] of [
    ['an invalid effect', '{"id":"pol_corrupt","name":"corrupt","effect":"maybe","actions":["orders.read"]}'],
    [
      'a broken condition',
      `{"id":"pol_corrupt","name":"corrupt","effect":"allow","actions":["orders.read"],"condition":"amount <"}`,
    ],
    ['not an object', '"just a string"'],
    ['null', 'null'],
    ['a duplicate name', '{"id":"pol_corrupt","name":"t0","effect":"deny","actions":["orders.read"]}'],
  ] as const) {
    it(`a stored policy with ${name}: decisions 503 service.unavailable; deleting it restores them`, async () => {
      expect(json(await decideLive()).effect).toBe('allow');
      await corrupt(body);
      for (let i = 0; i < 2; i++) {
        const r = await decideLive();
        expectUnavailable(r, `decision with ${name} stored`);
        expect(json(r).error.message).toMatch(/polic/);
      }
      // Other environments are unaffected.
      expect(
        (
          await rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            payload: { agent_id: agent('test-env'), action: 'orders.read' },
          })
        ).statusCode,
      ).toBe(200);
      await rt.store
        .sql`delete from policies where account_id = ${rt.accountId} and environment = 'live' and id = 'pol_corrupt'`;
      const after = await decideLive();
      expect(after.statusCode, after.body).toBe(200);
      expect(json(after).effect).toBe('allow');
    });
  }
});
