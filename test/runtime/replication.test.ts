/**
 * Several server processes on one PostgreSQL database (runtime/domain/
 * replication.ts): a policy change or an agent revocation made through one
 * runtime reaches the next decisions of the others through NOTIFY (A and B run
 * no periodic check here, so NOTIFY is the only way), and a runtime that
 * receives no notifications (C) catches up through the periodic version check.
 * No timing is asserted: each test polls the decisions until they change.
 * PostgreSQL only (the embedded store has a single process).
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import { startReplication, type Replication } from '../../runtime/background/policy-refresh.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { openServices, type Services } from '../../runtime/services.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { START } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { callerOf, decide as kitDecide } from '../helpers/kit.js';

/** How long a poll waits for a change to arrive before the test fails (a deadline, not a measure). */
const WITHIN_MS = 15_000;
/** A and B: no periodic version check during the test (NOTIFY only); C: the default, as `authz serve`. */
const NO_CHECK_MS = 3_600_000;

interface Node {
  name: string;
  store: Store;
  services: Services;
  app: FastifyInstance;
  replication: Replication;
  call(options: InjectOptions): Promise<{ statusCode: number; body: JsonObject }>;
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
   * `listen: false` makes it ignore NOTIFY, leaving only the periodic check
   * (every second, as `authz serve`); a listening node runs no periodic check.
   */
  async function startNode(name: string, listen = true): Promise<Node> {
    const opened = await openStore({ databaseUrl: db.url, max: 4 });
    const store: Store = listen ? opened : { ...opened, supportsListen: false };
    // A clock that stands still: the agent directory's cache never expires on its
    // own, so a revocation can only arrive through replication.
    const services = await openServices({ config: configFromEnv({}), store, clock: new ManualClock(START) });
    const app = await buildApp(services);
    const replication = await startReplication(
      store,
      services.policySets,
      services.agentDirectory,
      listen ? NO_CHECK_MS : undefined,
    );
    const node: Node = {
      name,
      store: opened,
      services,
      app,
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

  const decide = (node: Node, payload: Record<string, unknown>) => kitDecide(callerOf(node.app, key), payload);

  /** Decides on `node` until `done(decision)` (a poll; failing after WITHIN_MS with the last decision). */
  async function until(node: Node, payload: Record<string, unknown>, done: (d: JsonObject) => boolean): Promise<void> {
    const summary = async () => {
      const d = await decide(node, payload);
      return { node: node.name, effect: d.effect, reason: d.reason, policy_id: d.policy_id };
    };
    await expect.poll(summary, { timeout: WITHIN_MS, interval: 20 }).toSatisfy(done);
  }

  const request = { agent_id: 'repl-bot-1', action: 'orders.read', resource: 'order:1' };

  it('a policy created, disabled, enabled and deleted through A reaches B through NOTIFY (and a non-listening C through the periodic check)', async () => {
    // B and C have compiled the (empty) set and answer from memory.
    expect(await decide(b, request)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
    expect(await decide(c, request)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });

    const body = { name: 'repl-orders', effect: 'allow', agents: ['repl-*'], actions: ['orders.read'] };
    const created = await a.call({ method: 'POST', url: '/v1/policies', payload: body });
    expect(created.statusCode).toBe(201);
    const id = created.body.id as string;
    // A itself: the very next decision.
    expect(await decide(a, request)).toMatchObject({ effect: 'allow', policy_id: id });
    await until(b, request, (d) => d.effect === 'allow' && d.policy_id === id);
    await until(c, request, (d) => d.effect === 'allow' && d.policy_id === id);

    expect(
      (await a.call({ method: 'PUT', url: `/v1/policies/${id}`, payload: { ...body, state: 'disabled' } })).statusCode,
    ).toBe(200);
    expect(await decide(a, request)).toMatchObject({ effect: 'deny', reason: 'policy.disabled' });
    await until(b, request, (d) => d.reason === 'policy.disabled');
    await until(c, request, (d) => d.reason === 'policy.disabled');

    // The other way round: a change through B reaches A.
    expect(
      (await b.call({ method: 'PUT', url: `/v1/policies/${id}`, payload: { ...body, state: 'enabled' } })).statusCode,
    ).toBe(200);
    await until(a, request, (d) => d.effect === 'allow');
    await until(c, request, (d) => d.effect === 'allow');

    expect((await a.call({ method: 'DELETE', url: `/v1/policies/${id}` })).statusCode).toBe(200);
    await until(b, request, (d) => d.reason === 'policy.not_found');
    await until(c, request, (d) => d.reason === 'policy.not_found');

    // Every runtime reports the same active set.
    const hashes = await Promise.all(
      [a, b, c].map(async (n) => (await n.call({ method: 'GET', url: '/v1/bundle' })).body.hash),
    );
    expect(new Set(hashes).size).toBe(1);
  });

  it('several quick changes through A end with B on the last one', async () => {
    const body = {
      id: 'pol_repl_burst',
      name: 'repl-burst',
      effect: 'allow',
      agents: ['repl-*'],
      actions: ['burst.run'],
    };
    expect((await a.call({ method: 'POST', url: '/v1/policies', payload: body })).statusCode).toBe(201);
    for (const priority of [90, 80, 70, 60]) {
      expect(
        (await a.call({ method: 'PUT', url: '/v1/policies/pol_repl_burst', payload: { ...body, priority } }))
          .statusCode,
      ).toBe(200);
    }
    expect(
      (await a.call({ method: 'PUT', url: '/v1/policies/pol_repl_burst', payload: { ...body, effect: 'review' } }))
        .statusCode,
    ).toBe(200);
    await until(b, { agent_id: 'repl-bot-2', action: 'burst.run' }, (d) => d.effect === 'review');
    // And it stays there (no older version overwrites it): once B has seen a later
    // change (NOTIFY delivers in commit order, so every notification of the burst
    // came before) and every load those notifications started has finished.
    const sentinel = {
      id: 'pol_repl_sentinel',
      name: 'repl-sentinel',
      effect: 'allow',
      agents: ['repl-*'],
      actions: ['sentinel.run'],
    };
    expect((await a.call({ method: 'POST', url: '/v1/policies', payload: sentinel })).statusCode).toBe(201);
    await until(b, { agent_id: 'repl-bot-2', action: 'sentinel.run' }, (d) => d.policy_id === 'pol_repl_sentinel');
    await b.services.policySets.idle();
    expect(await decide(b, { agent_id: 'repl-bot-2', action: 'burst.run' })).toMatchObject({
      effect: 'review',
      policy_id: 'pol_repl_burst',
    });
  });

  it('an agent revoked through A is denied agent.revoked through B (NOTIFY: its cache never expires on this clock), and restored likewise', async () => {
    const agent = { agent_id: 'repl-bot-7', action: 'burst.run' };
    // B has seen the agent: its status is cached there.
    expect(await decide(b, agent)).toMatchObject({ effect: 'review' });
    expect(await decide(b, agent)).toMatchObject({ effect: 'review' });

    const revoked = await a.call({ method: 'POST', url: '/v1/agents/repl-bot-7/revoke' });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect(await decide(a, agent)).toMatchObject({ effect: 'deny', reason: 'agent.revoked' });
    await until(b, agent, (d) => d.reason === 'agent.revoked');

    expect((await a.call({ method: 'POST', url: '/v1/agents/repl-bot-7/restore' })).statusCode).toBe(200);
    await until(b, agent, (d) => d.effect === 'review');
  });
});
