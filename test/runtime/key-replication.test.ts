/**
 * Keys across processes (runtime/background/key-replication.ts): an API key revoked
 * or rolled through one runtime is refused by another on the same PostgreSQL as
 * soon as `NOTIFY authz_api_keys` arrives, and a signing-key rotation through
 * one runtime (`NOTIFY authz_keys`) makes the other sign with the new key and
 * publish it.
 *
 * The runtimes run on a clock that stands still, so the key cache (5 s) never
 * expires on its own: a change can only arrive through the notification. The
 * embedded store serves one process and has no LISTEN: the runtime that makes
 * the change applies it itself at once (checked below on both stores).
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { startKeyReplication } from '../../runtime/background/key-replication.js';
import { startReplication, type Replication } from '../../runtime/background/policy-refresh.js';
import { openServices, type Services } from '../../runtime/services.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { createTestDatabase, STORE_KINDS } from '../helpers/postgres.js';
import { ADMIN_TOKEN, START, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { callerOf, decide as kitDecide, postDecision } from '../helpers/kit.js';

const config = () => configFromEnv({ AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN, AUTHZ_KEY_RATE_LIMIT: '1000000' });
const kidOf = (token: string) =>
  (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string }).kid;
const POLL = { timeout: 5_000, interval: 5 };

interface Node {
  name: string;
  store: Store;
  services: Services;
  app: FastifyInstance;
  replications: Replication[];
  call(key: string, options: InjectOptions): Promise<{ statusCode: number; body: JsonObject }>;
}

describe('keys across two runtimes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const nodes: Node[] = [];
  let accountId = '';
  let a: Node;
  let b: Node;

  async function startNode(name: string): Promise<Node> {
    const store = await openStore({ databaseUrl: db.url, max: 4 });
    const services = await openServices({ config: config(), store, clock: new ManualClock(START) });
    const app = await buildApp(services);
    const replications = [
      await startReplication(store, services.policySets, services.agentDirectory),
      await startKeyReplication(store, { apiKeys: services.apiKeys, ring: services.ring }),
    ];
    const node: Node = {
      name,
      store,
      services,
      app,
      replications,
      async call(key, options) {
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

  const newKey = async () => createApiKey(a.store.sql, accountId, 'test', ['*'], new Date(START));

  /**
   * Requests `key` on B in a loop until B answers 401; how long that took after
   * `change` returned and how many requests B still let through meanwhile.
   */
  async function propagation(key: string, change: () => Promise<void>): Promise<{ ms: number; admitted: number }> {
    // B has seen the key: it is in B's cache (which never expires here).
    expect((await b.call(key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    await change();
    const started = performance.now();
    let admitted = 0;
    await expect
      .poll(async () => {
        const status = (await b.call(key, { method: 'GET', url: '/v1/agents' })).statusCode;
        if (status === 200) admitted++;
        return status;
      }, POLL)
      .toBe(401);
    return { ms: Math.round(performance.now() - started), admitted };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    const setup = await openStore({ databaseUrl: db.url, max: 1 });
    try {
      await migrate(setup.sql);
      accountId = (await createAccount(setup.sql, 'main', new Date(START))).id;
    } finally {
      await setup.close();
    }
    a = await startNode('A');
    b = await startNode('B');
  });

  afterAll(async () => {
    for (const n of nodes) {
      for (const r of n.replications) await r.stop();
      await n.app.close();
      await n.services.writer.idle();
      await n.store.close();
    }
    await db?.drop();
  });

  const admin = (node: Node, method: 'POST' | 'DELETE', url: string) => node.call(ADMIN_TOKEN, { method, url });

  it('an API key revoked through A is refused by B once the notification arrives', async () => {
    const created = await newKey();
    const { ms, admitted } = await propagation(created.key, async () => {
      expect((await admin(a, 'DELETE', `/admin/api-keys/${created.id}`)).statusCode).toBe(200);
      // A itself refuses it at once.
      expect((await a.call(created.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(401);
    });
    console.info(`[key-replication] revocation reached B after ${ms} ms (${admitted} requests admitted meanwhile)`);
    // And it stays refused.
    expect((await b.call(created.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(401);
  });

  it('an API key rolled through A is refused by B, and its replacement works on B', async () => {
    const created = await newKey();
    let replacement = '';
    const { ms, admitted } = await propagation(created.key, async () => {
      const rolled = await admin(a, 'POST', `/admin/api-keys/${created.id}/rotate`);
      expect(rolled.statusCode).toBe(201);
      replacement = rolled.body.key as string;
    });
    console.info(`[key-replication] roll reached B after ${ms} ms (${admitted} requests admitted meanwhile)`);
    expect((await b.call(replacement, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
  });

  it('a signing key rotated through A signs B’s next permits and is in B’s JWKS', async () => {
    const key = (await newKey()).key;
    const policy = await a.call(key, {
      method: 'POST',
      url: '/v1/policies',
      payload: { name: 'kr-reads', effect: 'allow', actions: ['orders.read'] },
    });
    expect(policy.statusCode).toBe(201);
    const decide = (node: Node) => kitDecide(callerOf(node.app, key), { agent_id: 'kr-bot', action: 'orders.read' });
    await expect.poll(async () => (await decide(b)).effect, POLL).toBe('allow');
    const oldKid = kidOf((await decide(b)).permit_token as string);

    const rotated = await admin(a, 'POST', '/admin/signing-keys/rotate');
    expect(rotated.statusCode).toBe(200);
    const newKid = rotated.body.kid as string;
    expect(newKid).not.toBe(oldKid);
    expect(kidOf((await decide(a)).permit_token as string)).toBe(newKid);

    const started = performance.now();
    await expect.poll(async () => kidOf((await decide(b)).permit_token as string), POLL).toBe(newKid);
    console.info(
      `[key-replication] signing-key rotation reached B after ${Math.round(performance.now() - started)} ms`,
    );
    const jwks = (await b.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as {
      keys: Array<{ kid: string }>;
    };
    // The new key, and the retired one for the tokens it signed.
    expect(jwks.keys.map((k) => k.kid).sort()).toEqual([newKid, oldKid].sort());
    // A verifies what B signs.
    const token = (await decide(b)).permit_token as string;
    const verified = await a.call(key, { method: 'POST', url: '/v1/permits/verify', payload: { token } });
    expect(verified.statusCode).toBe(200);
    expect(verified.body.valid).toBe(true);
  });
});

describe.each(STORE_KINDS)('keys in the runtime that changes them (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    // The runtime starts key replication with its other background work (rt.background.keys, as
    // authz serve does); on the embedded store it listens to nothing (no LISTEN), and still starts and stops.
    rt = await startRuntime(kind);
  });
  afterAll(async () => {
    await rt?.close();
  });

  const admin = (method: 'POST' | 'DELETE', url: string) => rt.call(ADMIN_TOKEN, { method, url });

  it('refuses a revoked or rolled key at once', async () => {
    const first = await createApiKey(rt.store.sql, rt.accountId, 'test', ['*'], new Date(START));
    expect((await rt.call(first.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    expect((await admin('DELETE', `/admin/api-keys/${first.id}`)).statusCode).toBe(200);
    expect((await rt.call(first.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(401);

    const second = await createApiKey(rt.store.sql, rt.accountId, 'test', ['*'], new Date(START));
    expect((await rt.call(second.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    const rolled = await admin('POST', `/admin/api-keys/${second.id}/rotate`);
    expect(rolled.statusCode).toBe(201);
    expect((await rt.call(second.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(401);
    expect((await rt.call(rolled.json().key as string, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
  });

  it('signs the next permit with a rotated signing key', async () => {
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    const decide = async () =>
      (await postDecision(rt, { agent_id: 'kr-bot', action: 'orders.read' })).json().permit_token as string;
    const before = kidOf(await decide());
    const rotated = await admin('POST', '/admin/signing-keys/rotate');
    expect(rotated.statusCode).toBe(200);
    const kid = rotated.json().kid as string;
    expect(kid).not.toBe(before);
    expect(kidOf(await decide())).toBe(kid);
  });
});
