/**
 * Agent attributes across processes on one PostgreSQL (docs/api.md#agents: the process that answered the PUT uses the new
 * attributes for its next decision; the others see them within 2 seconds: a
 * notification, and a cache lifetime of at most 2 s for a missed one).
 *
 * 1. Two real `authz serve` processes, over HTTP, on the real clock: B has the
 *    agent cached; attributes changed through A reach B's decisions by NOTIFY
 *    (polled, the time it took printed, not asserted).
 * 2. In-process runtimes on a clock that stands still: B (listening) learns by
 *    NOTIFY alone, its cache never expiring on this clock; C, which receives no
 *    notification, keeps its copy until its clock is 2 s on, not a millisecond
 *    longer.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { startReplication, type Replication } from '../../runtime/background/policy-refresh.js';
import { openServices, type Services } from '../../runtime/services.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { accountKey, serverCalls, startServer, stopAll, uniqueId, type Server } from '../helpers/db-servers.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { ensureBuilt } from '../helpers/server-process.js';
import { START } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

/** A poll's deadline (not a measure): how long a change may take to arrive before the test fails. */
const WITHIN_MS = 15_000;
const EDITORS = {
  id: 'pol_editors',
  name: 'editors',
  effect: 'allow',
  agents: ['*'],
  actions: ['docs.edit'],
  condition: "contains(agent.attributes.roles, 'editor')",
};

describe('agent attributes across two `authz serve` processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let a: Server;
  let b: Server;
  let key = '';
  const { api, decideOk, install } = serverCalls(() => key);

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDatabase();
    a = await startServer('A', db.url);
    b = await startServer('B', db.url);
    key = await accountKey(a, 'attributes-processes');
  }, 90_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  }, 60_000);

  it(
    'attributes changed through A decide the next decisions of B, which had the agent cached',
    { timeout: 60_000 },
    async () => {
      // Installed through A; both decide with it (an agent with the role, given through A).
      const probe = uniqueId('probe');
      expect((await api(a, 'PUT', `/v1/agents/${probe}`, { attributes: { roles: ['editor'] } })).status).toBe(200);
      await install([a, b], EDITORS, () => ({ agent_id: probe, action: 'docs.edit' }));
      const agentId = uniqueId('agent');
      const edit = { agent_id: agentId, action: 'docs.edit' };
      expect((await api(a, 'PUT', `/v1/agents/${agentId}`, { attributes: { roles: ['viewer'] } })).status).toBe(200);
      // B reads the agent (viewer) and keeps it.
      await expect
        .poll(async () => (await decideOk(b, edit)).effect, { timeout: WITHIN_MS, interval: 20 })
        .toBe('deny');
      expect((await decideOk(b, edit)).effect).toBe('deny');

      for (const [roles, effect] of [
        [['editor'], 'allow'],
        [['viewer'], 'deny'],
        [['admin', 'editor'], 'allow'],
      ] as const) {
        const put = await api(a, 'PUT', `/v1/agents/${agentId}`, { attributes: { roles } });
        expect(put.status, JSON.stringify(put.body)).toBe(200);
        const changedAt = performance.now();
        // A, which answered the PUT, uses them at once.
        expect((await decideOk(a, edit)).effect).toBe(effect);
        await expect
          .poll(async () => (await decideOk(b, edit)).effect, { timeout: WITHIN_MS, interval: 10 })
          .toBe(effect);
        console.log(
          `attributes ${JSON.stringify(roles)} through A: B decided ${effect} after ${Math.round(performance.now() - changedAt)} ms`,
        );
        // B reads them too.
        expect((await api(b, 'GET', `/v1/agents/${agentId}`)).body.attributes).toEqual({ roles });
      }
    },
  );
});

interface Node {
  name: string;
  store: Store;
  services: Services;
  app: FastifyInstance;
  clock: ManualClock;
  replication: Replication;
  call(options: InjectOptions): Promise<{ statusCode: number; body: JsonObject }>;
}

describe('agent attributes between runtimes on one PostgreSQL, on a clock that stands still', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const nodes: Node[] = [];
  let key = '';

  /** A runtime of its own (pool, services, caches). `listen: false`: it receives no NOTIFY. */
  async function startNode(name: string, listen: boolean): Promise<Node> {
    const opened = await openStore({ databaseUrl: db.url, max: 4 });
    const store: Store = listen ? opened : { ...opened, supportsListen: false };
    const clock = new ManualClock(START);
    const services = await openServices({ config: configFromEnv({ AUTHZ_KEY_RATE_LIMIT: '1000000' }), store, clock });
    const app = await buildApp(services);
    const replication = await startReplication(store, services.policySets, services.agentDirectory);
    const node: Node = {
      name,
      store: opened,
      services,
      app,
      clock,
      replication,
      async call(options) {
        const r = await app.inject({
          ...options,
          headers: { authorization: `Bearer ${key}`, ...(options.headers ?? {}) },
        });
        return { statusCode: r.statusCode, body: r.json() as JsonObject };
      },
    };
    nodes.push(node);
    return node;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    const setup = await openStore({ databaseUrl: db.url, max: 1 });
    try {
      await migrate(setup.sql);
      const account = await createAccount(setup.sql, 'main', new Date(START));
      key = (await createApiKey(setup.sql, account.id, 'test', ['*'], new Date(START))).key;
    } finally {
      await setup.close();
    }
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.replication.stop();
      await n.app.close();
      await n.services.writer.idle();
      await n.store.close();
    }
    await db?.drop();
  });

  const effectOf = async (node: Node, agentId: string) => {
    const r = await node.call({
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: agentId, action: 'docs.edit' },
    });
    expect(r.statusCode, JSON.stringify(r.body)).toBe(200);
    return r.body.effect as string;
  };

  it('a listening runtime learns by NOTIFY; one that missed it keeps its copy for 2 s of its clock, no longer', async () => {
    const a = await startNode('A', true);
    const b = await startNode('B', true);
    const c = await startNode('C (no LISTEN)', false);
    expect((await a.call({ method: 'POST', url: '/v1/policies', payload: EDITORS })).statusCode).toBe(201);
    const agentId = 'attr-bot-1';
    expect(
      (await a.call({ method: 'PUT', url: `/v1/agents/${agentId}`, payload: { attributes: { roles: ['viewer'] } } }))
        .statusCode,
    ).toBe(200);
    // B and C read the agent (a viewer) and cache it; C learns the policy by its periodic check.
    await expect.poll(() => effectOf(b, agentId), { timeout: WITHIN_MS, interval: 20 }).toBe('deny');
    await expect
      .poll(async () => (await c.call({ method: 'GET', url: '/v1/policies' })).body.data.length, {
        timeout: WITHIN_MS,
        interval: 50,
      })
      .toBe(1);
    expect(await effectOf(c, agentId)).toBe('deny');

    expect(
      (await a.call({ method: 'PUT', url: `/v1/agents/${agentId}`, payload: { attributes: { roles: ['editor'] } } }))
        .statusCode,
    ).toBe(200);
    expect(await effectOf(a, agentId)).toBe('allow');
    // B: only the notification can tell it (its clock stands still, the entry never expires).
    await expect.poll(() => effectOf(b, agentId), { timeout: WITHIN_MS, interval: 10 }).toBe('allow');
    // C: the notification never comes; its copy is trusted for 2 s of its clock.
    expect(await effectOf(c, agentId)).toBe('deny');
    c.clock.advance(1.999);
    expect(await effectOf(c, agentId)).toBe('deny');
    c.clock.advance(0.001);
    expect(await effectOf(c, agentId)).toBe('allow');
  });
});
