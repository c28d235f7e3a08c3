/**
 * Several server processes on one PostgreSQL database (runtime/engine/
 * replication.ts): a policy change or an agent revocation made through one
 * runtime reaches the next decisions of the others promptly, through NOTIFY, and
 * a runtime that receives no notifications catches up through the periodic
 * version check. PostgreSQL only (the embedded store has a single process).
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import { startReplication, type Replication } from '../../runtime/domain/replication.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { openServices, type Services } from '../../runtime/services.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { START } from './helpers/app.js';

const WITHIN_MS = 3_000;

interface Node {
  name: string;
  store: Store;
  services: Services;
  app: FastifyInstance;
  replication: Replication;
  call(options: InjectOptions): Promise<{ statusCode: number; body: Record<string, any> }>;
}

describe('replication between runtimes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const nodes: Node[] = [];
  let key = '';
  let a: Node;
  let b: Node;
  let c: Node;

  /**
   * A runtime of its own: its own connection pool, services and compiled tables.
   * `listen: false` makes it ignore NOTIFY, leaving only the periodic check.
   */
  async function startNode(name: string, listen = true): Promise<Node> {
    const opened = await openStore({ databaseUrl: db.url, max: 4 });
    const store: Store = listen ? opened : { ...opened, supportsListen: false };
    // A clock that stands still: the agent directory's cache never expires on its
    // own, so a revocation can only arrive through replication.
    const services = await openServices({ config: configFromEnv({}), store, clock: new ManualClock(START) });
    const app = await buildApp(services);
    const replication = await startReplication(store, services.policySets, services.agents); // the default interval, as `authz serve`
    const node: Node = {
      name,
      store: opened,
      services,
      app,
      replication,
      async call(options) {
        const r = await app.inject({ ...options, headers: { authorization: `Bearer ${key}`, ...(options.headers ?? {}) } });
        return { statusCode: r.statusCode, body: r.json() as Record<string, any> };
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
    a = await startNode('A');
    b = await startNode('B');
    c = await startNode('C (no LISTEN)', false);
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

  const decide = async (node: Node, payload: Record<string, unknown>) => {
    const r = await node.call({ method: 'POST', url: '/v1/decisions', payload });
    expect(r.statusCode).toBe(200);
    return r.body;
  };

  /** Decides on `node` until `done(decision)`; the time it took, or a failure after WITHIN_MS. */
  async function until(node: Node, payload: Record<string, unknown>, done: (d: Record<string, any>) => boolean): Promise<number> {
    const started = Date.now();
    let last: Record<string, any> | undefined;
    while (Date.now() - started < WITHIN_MS) {
      last = await decide(node, payload);
      if (done(last)) return Date.now() - started;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${node.name} still decides ${JSON.stringify({ effect: last?.effect, reason: last?.reason, policy_id: last?.policy_id })} after ${WITHIN_MS} ms`);
  }

  const request = { agent_id: 'repl-bot-1', action: 'orders.read', resource: 'order:1' };

  it('a policy created, disabled, enabled and deleted through A reaches B (and a non-listening C) within a second or so', async () => {
    // B and C have compiled the (empty) set and answer from memory.
    expect(await decide(b, request)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
    expect(await decide(c, request)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });

    const body = { name: 'repl-orders', effect: 'allow', agents: ['repl-*'], actions: ['orders.read'] };
    const created = await a.call({ method: 'POST', url: '/v1/policies', payload: body });
    expect(created.statusCode).toBe(201);
    const id = created.body.id as string;
    // A itself: the very next decision.
    expect(await decide(a, request)).toMatchObject({ effect: 'allow', policy_id: id });
    const tookB = await until(b, request, (d) => d.effect === 'allow' && d.policy_id === id);
    expect(tookB).toBeLessThan(1_500);
    await until(c, request, (d) => d.effect === 'allow' && d.policy_id === id);

    expect((await a.call({ method: 'PUT', url: `/v1/policies/${id}`, payload: { ...body, state: 'disabled' } })).statusCode).toBe(200);
    expect(await decide(a, request)).toMatchObject({ effect: 'deny', reason: 'policy.disabled' });
    await until(b, request, (d) => d.reason === 'policy.disabled');
    await until(c, request, (d) => d.reason === 'policy.disabled');

    // The other way round: a change through B reaches A.
    expect((await b.call({ method: 'PUT', url: `/v1/policies/${id}`, payload: { ...body, state: 'enabled' } })).statusCode).toBe(200);
    await until(a, request, (d) => d.effect === 'allow');
    await until(c, request, (d) => d.effect === 'allow');

    expect((await a.call({ method: 'DELETE', url: `/v1/policies/${id}` })).statusCode).toBe(200);
    await until(b, request, (d) => d.reason === 'policy.not_found');
    await until(c, request, (d) => d.reason === 'policy.not_found');

    // Every runtime reports the same active set.
    const hashes = await Promise.all([a, b, c].map(async (n) => (await n.call({ method: 'GET', url: '/v1/bundle' })).body.hash));
    expect(new Set(hashes).size).toBe(1);
  });

  it('several quick changes through A end with B on the last one', async () => {
    const body = { id: 'pol_repl_burst', name: 'repl-burst', effect: 'allow', agents: ['repl-*'], actions: ['burst.run'] };
    expect((await a.call({ method: 'POST', url: '/v1/policies', payload: body })).statusCode).toBe(201);
    for (const priority of [90, 80, 70, 60]) {
      expect((await a.call({ method: 'PUT', url: '/v1/policies/pol_repl_burst', payload: { ...body, priority } })).statusCode).toBe(200);
    }
    expect((await a.call({ method: 'PUT', url: '/v1/policies/pol_repl_burst', payload: { ...body, effect: 'review' } })).statusCode).toBe(200);
    await until(b, { agent_id: 'repl-bot-2', action: 'burst.run' }, (d) => d.effect === 'review');
    // And it stays there (no older version overwrites it).
    await new Promise((r) => setTimeout(r, 300));
    expect(await decide(b, { agent_id: 'repl-bot-2', action: 'burst.run' })).toMatchObject({ effect: 'review', policy_id: 'pol_repl_burst' });
  });

  it('an agent revoked through A is denied agent.revoked through B promptly, and restored likewise', async () => {
    const agent = { agent_id: 'repl-bot-7', action: 'burst.run' };
    // B has seen the agent: its status is cached there.
    expect(await decide(b, agent)).toMatchObject({ effect: 'review' });
    expect(await decide(b, agent)).toMatchObject({ effect: 'review' });

    const revoked = await a.call({ method: 'POST', url: '/v1/agents/repl-bot-7/revoke' });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect(await decide(a, agent)).toMatchObject({ effect: 'deny', reason: 'agent.revoked' });
    const took = await until(b, agent, (d) => d.reason === 'agent.revoked');
    expect(took).toBeLessThan(1_500);

    expect((await a.call({ method: 'POST', url: '/v1/agents/repl-bot-7/restore' })).statusCode).toBe(200);
    await until(b, agent, (d) => d.effect === 'review');
  });
});
