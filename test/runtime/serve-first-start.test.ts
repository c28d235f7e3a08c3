/**
 * `authz serve` as a new user meets it (issue 36), real child processes:
 * - the first start on an empty PostgreSQL (DATABASE_URL) does what the
 *   embedded first start does: the default account, a test and a live key
 *   printed once, the examples loaded, so the first curl gets a decision; a
 *   second start prints no keys but names the account; AUTHZ_SEED=0 leaves the
 *   database empty (and says how to make keys);
 * - a port in use is one sentence naming it and what to do, exit 2, before
 *   the store is opened (no data directory made, no stack);
 * - the quiet default log (LOG_LEVEL unset): no line per request, a summary
 *   of the requests (at the stop here: the periodic one comes every minute);
 *   LOG_LEVEL=info: a JSON line per request.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, configFromEnv } from '../../runtime/config.js';
import { createTestDatabase } from '../helpers/postgres.js';
import {
  ensureBuilt,
  freePort,
  HOST,
  request,
  ROOT,
  startServeProcess,
  stopServer,
  type ServeProcess,
} from '../helpers/server-process.js';
import type { JsonObject } from '../helpers/json.js';

const decision = { agent_id: 'support-bot-1', action: 'orders.read', resource: 'order:1001' };

describe('authz serve: the first start on an empty PostgreSQL', () => {
  const dbs: Array<{ url: string; drop(): Promise<void> }> = [];
  const tmp = mkdtempSync(join(tmpdir(), 'authz-first-start-'));
  const running: ServeProcess[] = [];
  const start = async (env: NodeJS.ProcessEnv) => {
    const port = await freePort();
    // The master key file goes beside a data dir of this test (the key itself is generated).
    const p = await startServeProcess(port, { AUTHZ_DATA_DIR: join(tmp, `data-${port}`), ...env });
    running.push(p);
    return { p, base: `http://${HOST}:${port}` };
  };

  beforeAll(() => ensureBuilt(), 120_000);
  afterAll(async () => {
    for (const p of running) await stopServer(p);
    for (const db of dbs) await db.drop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('seeds the default account, prints its keys once and loads the examples; a second start names the account', async () => {
    const db = await createTestDatabase();
    dbs.push(db);
    const key = join(tmp, 'shared.master-key');
    const first = await start({ DATABASE_URL: db.url, AUTHZ_MASTER_KEY_FILE: key });
    const out = first.p.stdout.join('\n');
    const accountId = /Created account "default" \((acc_\w+)\)/.exec(out)?.[1];
    expect(accountId, out).toBeDefined();
    const testKey = /^ {2}test key: (svc_test_sk_\w+)$/m.exec(out)?.[1];
    expect(testKey, out).toBeDefined();
    expect(out).toMatch(/^ {2}live key: svc_live_sk_\w+$/m);
    expect(out).toMatch(/^Loaded \d+ policies from examples\/ into the test environment\.$/m);
    expect(out).toContain('Operator API (/admin): off; set AUTHZ_ADMIN_TOKEN');
    const decided = await request(first.base, testKey!, 'POST', '/v1/decisions', decision);
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ effect: 'allow', reason: 'policy.matched' });
    await stopServer(first.p);

    const second = await start({ DATABASE_URL: db.url, AUTHZ_MASTER_KEY_FILE: key });
    const again = second.p.stdout.join('\n');
    expect(again).not.toMatch(/Created account|test key:|Loaded \d+ policies/);
    expect(again).toContain(
      `Account "default": ${accountId} (its keys were printed at its first start; more with authz keys create --account ${accountId})`,
    );
    expect((await request(second.base, testKey!, 'POST', '/v1/decisions', decision)).status).toBe(200);
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      expect(await sql`select name from accounts`).toEqual([{ name: 'default' }]);
    } finally {
      await sql.end();
    }
  });

  it('AUTHZ_SEED=0: the database stays empty; AUTHZ_SEED must be 0 or 1, LOG_LEVEL a level', async () => {
    const db = await createTestDatabase();
    dbs.push(db);
    const { p } = await start({
      DATABASE_URL: db.url,
      AUTHZ_SEED: '0',
      AUTHZ_MASTER_KEY_FILE: join(tmp, 'unseeded.master-key'),
    });
    expect(p.stdout.join('\n')).not.toMatch(/Created account|key:|Loaded/);
    expect(p.stdout).toContain(
      'The store has no account (AUTHZ_SEED=0 seeds none): make one and its first key with authz keys create --account-name NAME (the operator API: AUTHZ_ADMIN_TOKEN).',
    );
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      expect(await sql`select count(*)::int as n from accounts`).toEqual([{ n: 0 }]);
    } finally {
      await sql.end();
    }
    expect(configFromEnv({}).seed).toBe(true);
    expect(configFromEnv({ AUTHZ_SEED: '0' }).seed).toBe(false);
    expect(() => configFromEnv({ AUTHZ_SEED: 'no' })).toThrow(ConfigError);
    // LOG_LEVEL: a pino level, or unset (the quiet default).
    expect(configFromEnv({}).logLevel).toBeUndefined();
    expect(configFromEnv({ LOG_LEVEL: '' }).logLevel).toBeUndefined();
    expect(configFromEnv({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(() => configFromEnv({ LOG_LEVEL: 'verbose' })).toThrow(
      /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/,
    );
  });
});

describe('authz serve: a port in use', () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    ensureBuilt();
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, HOST, resolve));
    port = (holder.address() as { port: number }).port;
  }, 120_000);
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  it('says which port and what to do, exit 2, before opening the store', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'authz-port-in-use-'));
    const dataDir = join(tmp, 'data');
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST, AUTHZ_DATA_DIR: dataDir };
      delete env.DATABASE_URL;
      const child = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
      child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(2);
      expect(stderr).toBe(
        `authz serve: port ${port} is already in use on ${HOST} (another authz serve, or another program): stop it, or start this one on another port, e.g. PORT=${port + 1} npm start\n`,
      );
      expect(stdout).not.toMatch(/embedded store/);
      expect(existsSync(dataDir)).toBe(false);
      expect(existsSync(`${dataDir}.master-key`)).toBe(false);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('authz serve: the log', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'authz-serve-log-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  beforeAll(() => ensureBuilt(), 120_000);

  /** Serves on a fresh embedded store with LOG_LEVEL as given, sends a few requests, stops; what it printed. */
  async function served(logLevel: string, name: string): Promise<string[]> {
    const port = await freePort();
    const p = await startServeProcess(port, { AUTHZ_DATA_DIR: join(tmp, name), LOG_LEVEL: logLevel }, 60_000);
    const testKey = /test key: (svc_test_sk_\w+)/.exec(p.stdout.join('\n'))![1]!;
    const base = `http://${HOST}:${port}`;
    const printed = p.stdout.length;
    expect((await request(base, testKey, 'POST', '/v1/decisions', decision)).status).toBe(200);
    expect((await request(base, testKey, 'POST', '/v1/decisions', decision)).status).toBe(200);
    expect((await request(base, testKey, 'GET', '/v1/policies/pol_nope')).status).toBe(404);
    expect((await request(base, 'svc_test_sk_unknownunknownunknownunknown00', 'GET', '/v1/decisions')).status).toBe(
      401,
    );
    await stopServer(p);
    return p.stdout.slice(printed);
  }

  it('LOG_LEVEL unset: no line per request; a summary of the requests answered', async () => {
    const lines = await served('', 'quiet');
    expect(lines.filter((l) => l.startsWith('{') && l.includes('"request completed"'))).toEqual([]);
    const summary = lines.filter((l) => / requests since the last summary: /.test(l));
    expect(summary).toHaveLength(1);
    expect(summary[0]).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z requests since the last summary: 4 \(2xx 2, 4xx 2, 5xx 0\); slowest \d+ ms$/,
    );
  }, 120_000);

  it('LOG_LEVEL=info: a JSON line per request, no summary', async () => {
    const lines = await served('info', 'verbose');
    const completed = lines
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as JsonObject)
      .filter((l) => l.msg === 'request completed');
    expect(completed.map((l) => l.res.statusCode)).toEqual([200, 200, 404, 401]);
    expect(lines.some((l) => l.includes('requests since'))).toBe(false);
  }, 120_000);
});
