/**
 * Keys across two real `authz serve` processes on one PostgreSQL, over HTTP, on
 * the real clock (what runtime/serve.ts wires up): an API key revoked through
 * A is refused by B (the time it took and the requests B admitted meanwhile are
 * printed: the notification, not the key cache's 5 s, decides it); a signing
 * key rotated through A signs B's next permits and is in B's JWKS (without the
 * notification B would sign with the old key until restarted).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/postgres.js';
import { eachLine, ensureBuilt, freePort, HOST, request, ROOT } from '../helpers/server-process.js';

const AUTHZ_JS = join(ROOT, 'bin', 'authz.js');
const ADMIN_TOKEN = 'admin-token-for-key-replication-0123456789';
const kidOf = (token: string) =>
  (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string }).kid;

interface Server {
  name: string;
  child: ChildProcess;
  base: string;
  exited: Promise<void>;
}

const running = new Set<Server>();

/** `authz serve` on the database; resolves once it prints that it listens. */
async function startServer(name: string, databaseUrl: string): Promise<Server> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
    PORT: String(port),
    HOST,
    LOG_LEVEL: 'warn',
    AUTHZ_KEY_RATE_LIMIT: '1000000',
  };
  delete env.AUTHZ_DATA_DIR;
  delete env.AUTHZ_TEST_CLOCK;
  const child = spawn(process.execPath, [AUTHZ_JS, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const server: Server = { name, child, base: `http://${HOST}:${port}`, exited };
  running.add(server);
  void exited.then(() => running.delete(server));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not listening after 30 s:\n${output.join('')}`)), 30_000);
    eachLine(child.stdout!, (line) => {
      output.push(line);
      if (line.includes(`listening on http://${HOST}:${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${name}: exited before listening:\n${output.join('\n')}`));
    });
  });
  return server;
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  await server.exited;
  clearTimeout(timer);
}

describe('keys across two `authz serve` processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let a: Server;
  let b: Server;
  let accountId = '';

  const newKey = async () => {
    const r = await request(a.base, ADMIN_TOKEN, 'POST', `/admin/accounts/${accountId}/api-keys`, {
      environment: 'test',
      scopes: ['*'],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { id: string; key: string };
  };

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDatabase();
    a = await startServer('A', db.url);
    b = await startServer('B', db.url);
    const account = await request(a.base, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'key-replication' });
    expect(account.status, JSON.stringify(account.body)).toBe(201);
    accountId = account.body.id as string;
  }, 90_000);

  afterAll(async () => {
    await Promise.all([...running].map((server) => stopServer(server)));
    await db?.drop();
  }, 60_000);

  it('an API key revoked through A: B answers 401 once the notification arrives', async () => {
    const { id, key } = await newKey();
    // B has the key in its cache.
    expect((await request(b.base, key, 'GET', '/v1/agents')).status).toBe(200);
    expect((await request(a.base, ADMIN_TOKEN, 'DELETE', `/admin/api-keys/${id}`)).status).toBe(200);
    const started = performance.now();
    let admitted = 0;
    await expect
      .poll(
        async () => {
          const status = (await request(b.base, key, 'GET', '/v1/agents')).status;
          if (status === 200) admitted++;
          return status;
        },
        { timeout: 10_000, interval: 1 },
      )
      .toBe(401);
    console.info(
      `[key-replication, processes] revocation reached B after ${Math.round(performance.now() - started)} ms (${admitted} requests admitted meanwhile)`,
    );
  }, 30_000);

  it('a signing key rotated through A: B signs with it and publishes it', async () => {
    const { key } = await newKey();
    const created = await request(a.base, key, 'POST', '/v1/policies', {
      name: 'kr-reads',
      effect: 'allow',
      actions: ['orders.read'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const permitOf = async (server: Server) => {
      const r = await request(server.base, key, 'POST', '/v1/decisions', { agent_id: 'kr-bot', action: 'orders.read' });
      expect(r.status).toBe(200);
      return r.body.permit_token as string | null;
    };
    await expect.poll(() => permitOf(b), { timeout: 10_000, interval: 20 }).not.toBeNull();

    const rotated = await request(a.base, ADMIN_TOKEN, 'POST', '/admin/signing-keys/rotate');
    expect(rotated.status).toBe(200);
    const kid = rotated.body.kid as string;
    const started = performance.now();
    await expect.poll(async () => kidOf((await permitOf(b))!), { timeout: 10_000, interval: 1 }).toBe(kid);
    console.info(
      `[key-replication, processes] signing-key rotation reached B after ${Math.round(performance.now() - started)} ms`,
    );
    const jwks = await fetch(`${b.base}/.well-known/jwks.json`).then(
      (r) => r.json() as Promise<{ keys: Array<{ kid: string }> }>,
    );
    expect(jwks.keys.map((k) => k.kid)).toContain(kid);
  }, 30_000);
});
