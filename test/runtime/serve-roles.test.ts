/**
 * AUTHZ_ROLE (issue 25: webhooks at scale): an `api` process serves the API and
 * sends no webhooks; a `dispatcher` process sends them and answers only the
 * health routes. Real `authz serve` children on one PostgreSQL database, a real
 * receiver on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, configFromEnv } from '../../runtime/config.js';
import { createTestDatabase } from '../helpers/postgres.js';
import {
  ensureBuilt,
  freePort,
  HOST,
  request,
  startServeProcess,
  stopServer,
  type ServeProcess,
} from '../helpers/server-process.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const ADMIN_TOKEN = 'admin-token-for-serve-roles-0123456789';
const METRICS_TOKEN = 'metrics-token-for-serve-roles-0123456789';

/** Polls `done` every 50 ms until it holds or `ms` pass. */
async function until(done: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

describe('AUTHZ_ROLE', () => {
  it('is all by default, api or dispatcher only with PostgreSQL, and nothing else', () => {
    expect(configFromEnv({}).role).toBe('all');
    expect(configFromEnv({ AUTHZ_ROLE: 'api', DATABASE_URL: 'postgres://x@127.0.0.1/db' }).role).toBe('api');
    expect(configFromEnv({ AUTHZ_ROLE: 'dispatcher', DATABASE_URL: 'postgres://x@127.0.0.1/db' }).role).toBe(
      'dispatcher',
    );
    expect(() => configFromEnv({ AUTHZ_ROLE: 'api' })).toThrow(/AUTHZ_ROLE=api needs DATABASE_URL/);
    expect(() => configFromEnv({ AUTHZ_ROLE: 'worker', DATABASE_URL: 'postgres://x@127.0.0.1/db' })).toThrow(
      ConfigError,
    );
  });

  describe('an api process and a dispatcher process on one PostgreSQL', () => {
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    let receiver: Receiver;
    const procs: ServeProcess[] = [];
    let apiBase: string;
    let dispatcherBase: string;
    let key: string;

    beforeAll(async () => {
      ensureBuilt();
      db = await createTestDatabase();
      receiver = await startReceiver();
      const env = {
        DATABASE_URL: db.url,
        AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
        AUTHZ_METRICS_TOKEN: METRICS_TOKEN,
        AUTHZ_WEBHOOK_ALLOW_PRIVATE: '1',
      };
      const [apiPort, dispatcherPort] = [await freePort(), await freePort()];
      procs.push(await startServeProcess(apiPort, { ...env, AUTHZ_ROLE: 'api' }));
      apiBase = `http://${HOST}:${apiPort}`;
      const account = await request(apiBase, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'roles' });
      key = (
        await request(apiBase, ADMIN_TOKEN, 'POST', `/admin/accounts/${account.body.id}/api-keys`, {
          environment: 'test',
          scopes: ['*'],
        })
      ).body.key;
      expect(
        (await request(apiBase, key, 'POST', '/v1/webhooks', { url: receiver.url, events: ['decision.allow'] })).status,
      ).toBe(201);
      expect(
        (
          await request(apiBase, key, 'POST', '/v1/policies', {
            name: 'reads',
            effect: 'allow',
            actions: ['orders.read'],
          })
        ).status,
      ).toBe(201);
      procs.push(await startServeProcess(dispatcherPort, { ...env, AUTHZ_ROLE: 'dispatcher' }));
      dispatcherBase = `http://${HOST}:${dispatcherPort}`;
    }, 120_000);

    afterAll(async () => {
      await Promise.all(procs.map(stopServer));
      await receiver?.close();
      await db?.drop();
    }, 60_000);

    it('the api process decides, the dispatcher process delivers, and the api process has made no attempt', async () => {
      const decided: string[] = [];
      for (let i = 0; i < 5; i++) {
        const d = await request(apiBase, key, 'POST', '/v1/decisions', {
          agent_id: 'role-agent',
          action: 'orders.read',
        });
        expect(d.status).toBe(200);
        decided.push(d.body.id);
      }
      const delivered = () => new Set(receiver.received.map((r) => r.body.data?.decision?.id));
      await until(() => decided.every((id) => delivered().has(id)));
      expect(decided.filter((id) => !delivered().has(id))).toEqual([]);
      // Every attempt was the dispatcher's: the api process counted none.
      const metrics = await fetch(`${apiBase}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(metrics.status).toBe(200);
      const attempts = (await metrics.text())
        .split('\n')
        .filter((l) => l.startsWith('authz_webhook_deliveries_total{'));
      expect(attempts.map((l) => Number(l.split(' ').pop())).reduce((a, b) => a + b, 0)).toBe(0);
    });

    it('the dispatcher process answers the health routes and nothing else', async () => {
      expect((await fetch(`${dispatcherBase}/healthz`)).status).toBe(200);
      const ready = await fetch(`${dispatcherBase}/readyz`);
      expect(ready.status).toBe(200);
      const decide = await request(dispatcherBase, key, 'POST', '/v1/decisions', {
        agent_id: 'role-agent',
        action: 'orders.read',
      });
      expect(decide.status).toBe(404);
      expect(decide.body.error.code).toBe('route.not_found');
    });
  });
});
