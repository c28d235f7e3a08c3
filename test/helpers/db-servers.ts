/**
 * Real `authz serve` child processes on one PostgreSQL database, on the real
 * clock (no test clock), for the tests of budgets and limits across processes:
 * started one after the other (each start runs the migrations), stopped with
 * SIGTERM (SIGKILL after a while). Only the processes started here are stopped.
 */
import { expect } from 'vitest';
import {
  freePort,
  HOST,
  request,
  startServeProcess,
  stopServer as stopServeProcess,
  type ServeProcess,
} from './server-process.js';

export const ADMIN_TOKEN = 'admin-token-for-limits-processes-0123456789';

export interface Server extends ServeProcess {
  name: string;
  base: string;
}

/** The processes started and not yet exited. */
export const running = new Set<Server>();

/** Starts `authz serve` on the database and resolves once it prints that it listens. */
export async function startServer(name: string, databaseUrl: string, timeoutMs = 30_000): Promise<Server> {
  const port = await freePort();
  const proc = await startServeProcess(
    port,
    {
      DATABASE_URL: databaseUrl,
      AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
      AUTHZ_KEY_RATE_LIMIT: '1000000',
      // No periodic reload of exhausted budgets during the test: they cross processes by NOTIFY only.
      AUTHZ_BUDGET_SWEEP_SECONDS: '3600',
    },
    timeoutMs,
  ).catch((e: Error) => {
    throw new Error(`${name}: ${e.message}`);
  });
  const server: Server = { ...proc, name, base: `http://${HOST}:${port}` };
  running.add(server);
  void proc.exited.then(() => running.delete(server));
  return server;
}

/** SIGTERM, wait for the exit; SIGKILL after 10 s. */
export const stopServer = (server: Server): Promise<void> => stopServeProcess(server);

/** Stops every process started here (afterAll). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((server) => stopServer(server)));
}

/** A test key (scope `*`) of a new account, made through `server`'s operator API. */
export async function accountKey(server: Server, accountName: string): Promise<string> {
  const account = await request(server.base, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: accountName });
  expect(account.status, JSON.stringify(account.body)).toBe(201);
  const created = await request(server.base, ADMIN_TOKEN, 'POST', `/admin/accounts/${account.body.id}/api-keys`, {
    environment: 'test',
    scopes: ['*'],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.key as string;
}

let uniqueSeq = 0;
/** A fresh id per call (`tag-n-random`), so tests never share budget or limiter rows. */
export const uniqueId = (tag: string): string => `${tag}-${++uniqueSeq}-${Math.random().toString(36).slice(2, 8)}`;

/** `count` items, alternating between the two servers (half each). */
export const split = <T>(count: number, a: T, b: T): T[] =>
  Array.from({ length: count }, (_, i) => (i % 2 === 0 ? a : b));

/**
 * Calls to these servers with the key `key()` reads at each call: any request,
 * a decision, a decision that must answer 200, and installing a policy through
 * the first server until every server decides with it (`probe(server)`: the
 * request that shows it).
 */
export function serverCalls(key: () => string) {
  const api = (server: Server, method: string, path: string, body?: unknown) =>
    request(server.base, key(), method, path, body);
  const decide = (server: Server, body: Record<string, unknown>) => api(server, 'POST', '/v1/decisions', body);
  const decideOk = async (server: Server, body: Record<string, unknown>) => {
    const r = await decide(server, body);
    expect(r.status, `${server.name}: ${JSON.stringify(r.body)}`).toBe(200);
    return r.body;
  };
  const install = async (
    servers: readonly Server[],
    policy: Record<string, unknown>,
    probe: (server: Server) => Record<string, unknown>,
  ) => {
    const created = await api(servers[0]!, 'POST', '/v1/policies', { state: 'enabled', priority: 100, ...policy });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    for (const server of servers) {
      await expect
        .poll(async () => (await decide(server, probe(server))).body.policy_id, { timeout: 5_000, interval: 50 })
        .toBe(policy.id);
    }
  };
  return { api, decide, decideOk, install };
}
