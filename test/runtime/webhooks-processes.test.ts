/**
 * Two runtimes (own pools, own dispatchers) on one PostgreSQL share a burst of
 * deliveries: every event reaches the receiver exactly once (FOR UPDATE SKIP
 * LOCKED claims; no attempt is sent twice) and both dispatchers take part.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { openServices, type Services } from '../../runtime/services.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { START } from './helpers/app.js';

describe('webhook delivery by two processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let key = '';
  const nodes: Array<{ store: Store; services: Services; app: Awaited<ReturnType<typeof buildApp>> }> = [];
  const received = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = `${req.headers['x-service-event-id']}#${req.headers['x-service-delivery-attempt']}`;
      received.set(id, (received.get(id) ?? 0) + 1);
      // A little latency, as a real receiver has, so both dispatchers overlap.
      setTimeout(() => res.writeHead(200).end(), 2);
    });
  });

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
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    for (let i = 0; i < 2; i++) {
      const store = await openStore({ databaseUrl: db.url, max: 4 });
      const services = await openServices({
        config: { ...configFromEnv({}), keyRateLimit: 0 },
        store,
        clock: new ManualClock(START),
      });
      nodes.push({ store, services, app: await buildApp(services) });
    }
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.services.dispatcher.stop();
      await n.app.close();
      await n.services.writer.idle();
      await n.store.close();
    }
    await new Promise((resolve) => server.close(resolve));
    await db?.drop();
  });

  it('delivers a burst of 600 events exactly once each', async () => {
    const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
    const call = (n: typeof a, method: 'POST' | 'PUT', url: string, payload: object) =>
      n.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}` } });
    const port = (server.address() as { port: number }).port;
    expect(
      (await call(a, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${port}/hooks`, events: ['decision.allow'] }))
        .statusCode,
    ).toBe(201);
    expect(
      (await call(a, 'POST', '/v1/policies', { name: 'all-reads', effect: 'allow', actions: ['orders.read'] }))
        .statusCode,
    ).toBe(201);
    // B compiles the set from the store on its first decision.
    const decisions = [];
    for (let i = 0; i < 600; i++)
      decisions.push(
        call(i % 2 ? a : b, 'POST', '/v1/decisions', { agent_id: `burst-${i % 7}`, action: 'orders.read' }),
      );
    for (const r of await Promise.all(decisions)) expect(r.json().effect).toBe('allow');

    a.services.dispatcher.start();
    b.services.dispatcher.start();
    const deadline = Date.now() + 30_000;
    while (received.size < 600 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // Before counting, both dispatchers stop: each waits for its attempts in flight
    // and their records, so anything sent twice has arrived (the receiver counts a
    // request before it answers) and nothing more is sent.
    await a.services.dispatcher.stop();
    await b.services.dispatcher.stop();
    expect(received.size).toBe(600);
    expect([...received.values()].every((n) => n === 1)).toBe(true);
    expect([...received.keys()].every((k) => k.endsWith('#1'))).toBe(true);
    expect(a.services.dispatcher.attemptsMade + b.services.dispatcher.attemptsMade).toBe(600);
    expect(a.services.dispatcher.attemptsMade).toBeGreaterThan(0);
    expect(b.services.dispatcher.attemptsMade).toBeGreaterThan(0);
    // The store agrees: every delivery succeeded at its first attempt.
    const [row] = await a.store.sql<Array<{ n: number; ok: number }>>`
      select count(*)::int as n, count(*) filter (where status = 'succeeded' and attempts = 1)::int as ok from webhook_deliveries`;
    expect(row).toEqual({ n: 600, ok: 600 });
  }, 60_000);
});
