/**
 * The real server, `node bin/authz.js serve`, as a child process on the
 * embedded store on disk (no DATABASE_URL), as a newcomer runs it (docs/operations.md#start-up-and-configuration,
 * docs/api.md#health, docs/api.md#bundles): first start seeds and prints the keys, the first
 * curl gets a decision, SIGTERM stops it cleanly with exit code 0, a second
 * start on the same data dir keeps everything and prints no new keys, and
 * `--bundle FILE` loads that bundle into the test environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachLine, ensureBuilt, freePort, HOST, ROOT } from '../helpers/server-process.js';
import type { Bundle } from '../../compiler/bundle/format.js';
import type { CliIo } from '../../compiler/cli/io.js';
import { main } from '../../compiler/cli/main.js';
import type { JsonObject } from '../helpers/json.js';

interface Server {
  child: ChildProcess;
  port: number;
  base: string;
  /** Everything printed on stdout up to and including the "listening" line. */
  startup: string[];
  stdout: string[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();

/**
 * Starts `authz serve` and resolves once it prints that it listens. `port`: a
 * free port by default; with 0 the server picks one and the port is read from
 * the "listening on" line.
 */
async function startServer(
  dataDir: string,
  args: string[] = [],
  options: { port?: number; timeoutMs?: number } = {},
): Promise<Server> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const port = options.port ?? (await freePort());
  let boundPort = port;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST,
    AUTHZ_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  delete env.DATABASE_URL;
  delete env.AUTHZ_TEST_CLOCK;
  delete env.AUTHZ_ADMIN_TOKEN;
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `no "listening" within ${timeoutMs} ms; stdout:\n${stdout.join('\n')}\nstderr:\n${stderr.join('')}`,
          ),
        ),
      timeoutMs,
    );
    eachLine(child.stdout!, (line) => {
      stdout.push(line);
      const listeningOn = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (listeningOn) {
        boundPort = Number(listeningOn[1]);
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(
          `authz serve exited (${code ?? signal}) before listening; stdout:\n${stdout.join('\n')}\nstderr:\n${stderr.join('')}`,
        ),
      );
    });
  });
  await listening;
  return { child, port: boundPort, base: `http://${HOST}:${boundPort}`, startup: [...stdout], stdout, stderr, exited };
}

/** SIGTERM, then the exit code and signal (failing when it has not exited after `withinMs`: a deadline, not a measure). */
async function stopServer(
  server: Server,
  withinMs = 10_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  server.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`authz serve did not exit within ${withinMs} ms of SIGTERM`)), withinMs);
  });
  try {
    return await Promise.race([server.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const testKeyOf = (lines: string[]) =>
  lines.map((l) => /test key: (svc_test_sk_[0-9A-Za-z]+)/.exec(l)?.[1]).find(Boolean);
const liveKeyOf = (lines: string[]) =>
  lines.map((l) => /live key: (svc_live_sk_[0-9A-Za-z]+)/.exec(l)?.[1]).find(Boolean);

async function api(server: Server, key: string, method: string, path: string, body?: unknown) {
  const r = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, headers: r.headers, body: (await r.json()) as JsonObject };
}

function compileBundle(source: string, dir: string): { file: string; bundle: Bundle } {
  const out: string[] = [];
  const io: CliIo = { out: (t) => out.push(t), err: (t) => out.push(t), isTTY: false, cwd: ROOT };
  const file = join(dir, 'bundle.json');
  const code = main(['compile', source, '-o', file], io);
  if (code !== 0) throw new Error(`authz compile failed:\n${out.join('\n')}`);
  return { file, bundle: JSON.parse(readFileSync(file, 'utf8')) as Bundle };
}

describe('authz serve (child process, embedded store on disk)', () => {
  let tmp: string;
  let bundleFile: string;
  let bundle: Bundle;
  const supportRead = { agent_id: 'support-bot-1', action: 'orders.read', resource: 'order:1001' };
  const infraDeploy = { agent_id: 'infra-deployer-1', action: 'deploy.create', resource: 'staging:checkout-api' };

  /** The infrastructure examples' bundle is the test environment's set (and the support policies are gone). */
  const expectBundleActive = async (server: Server, key: string) => {
    expect(server.startup.join('\n')).toContain(
      `Loaded ${bundle.policies.length} policies from ${bundleFile} into the test environment`,
    );
    expect((await api(server, key, 'GET', '/v1/bundle')).body).toMatchObject({
      hash: bundle.hash,
      policies: bundle.policies.length,
    });
    expect((await api(server, key, 'POST', '/v1/decisions', supportRead)).body).toMatchObject({
      effect: 'deny',
      reason: 'policy.not_found',
    });
    expect((await api(server, key, 'POST', '/v1/decisions', infraDeploy)).body).toMatchObject({
      effect: 'allow',
      policy_id: 'pol_infra_deploy_nonprod',
    });
  };

  beforeAll(() => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'authz-serve-'));
    ({ file: bundleFile, bundle } = compileBundle('examples/infrastructure', tmp));
    expect(bundle.policies.map((p) => p.id)).not.toContain('pol_support_read_orders_customers');
  });
  afterAll(async () => {
    // A failed test must not leave a server behind: kill only the processes started here.
    const left = [...running].map(
      (child) => new Promise<void>((resolve) => (child.once('exit', () => resolve()), child.kill('SIGKILL'))),
    );
    await Promise.all(left);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('seeds on first start, decides, stops on SIGTERM with 0, restarts on the same data without new keys, and --bundle replaces its policies', async () => {
    const dataDir = join(tmp, 'data');
    const first = await startServer(dataDir);
    const testKey = testKeyOf(first.startup);
    const liveKey = liveKeyOf(first.startup);
    expect(testKey, first.startup.join('\n')).toBeDefined();
    expect(liveKey).toBeDefined();
    expect(first.startup.join('\n')).toMatch(/Loaded \d+ policies from examples\/ into the test environment/);
    expect(first.startup.join('\n')).toContain(`listening on http://${HOST}:${first.port}`);

    const health = await fetch(`${first.base}/healthz`);
    expect(health.status).toBe(200);
    expect(health.headers.get('request-id')).toMatch(/^req_/);
    const ready = await fetch(`${first.base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ store: 'embedded' });

    // The newcomer's first curl.
    const decided = await api(first, testKey!, 'POST', '/v1/decisions', supportRead);
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({
      object: 'decision',
      effect: 'allow',
      reason: 'policy.matched',
      policy_id: 'pol_support_read_orders_customers',
      livemode: false,
    });
    expect(decided.body.id).toMatch(/^dec_/);
    expect(decided.headers.get('request-id')).toMatch(/^req_/);
    // The live environment has no policies: default deny.
    const live = await api(first, liveKey!, 'POST', '/v1/decisions', supportRead);
    expect(live.body).toMatchObject({ effect: 'deny', reason: 'policy.not_found', livemode: true });
    expect(
      (await api(first, 'svc_test_sk_notarealkeynotarealkeynotarealkey00', 'GET', `/v1/decisions/${decided.body.id}`))
        .status,
    ).toBe(401);

    // It stops by itself on SIGTERM (exit code 0, not killed by the signal).
    expect(await stopServer(first)).toEqual({ code: 0, signal: null });

    // Second start, same data dir: nothing seeded again, nothing lost.
    const second = await startServer(dataDir);
    const out = second.startup.join('\n');
    expect(out).not.toMatch(/svc_(test|live)_sk_/);
    expect(out).not.toMatch(/Created account/);
    expect(out).not.toMatch(/Loaded \d+ policies/);
    const read = await api(second, testKey!, 'GET', `/v1/decisions/${decided.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: decided.body.id,
      effect: 'allow',
      agent_id: 'support-bot-1',
      action: 'orders.read',
      resource: 'order:1001',
      evaluated_at: decided.body.evaluated_at,
    });
    // The seeded policies are still there and still decide.
    expect(
      (await api(second, testKey!, 'POST', '/v1/decisions', { ...supportRead, resource: 'order:1002' })).body,
    ).toMatchObject({
      effect: 'allow',
      policy_id: 'pol_support_read_orders_customers',
    });
    expect((await stopServer(second)).code).toBe(0);

    // Third start with --bundle: the bundle replaces the examples; no new keys, the old key works.
    const withBundle = await startServer(dataDir, ['--bundle', bundleFile]);
    expect(withBundle.startup.join('\n')).not.toMatch(/svc_(test|live)_sk_/);
    await expectBundleActive(withBundle, testKey!);
    expect((await api(withBundle, testKey!, 'GET', `/v1/decisions/${decided.body.id}`)).status).toBe(200);
    // policy.updated for what changed: the examples' support policies deleted, the bundle's created once
    // (the start-up load fired one 'created' per example policy, the restart without --bundle none).
    const events = (await api(withBundle, testKey!, 'GET', '/v1/events?type=policy.updated&limit=100')).body
      .data as Array<{ data: { change: string; policy: { id: string } } }>;
    const changesOf = (id: string) =>
      events
        .filter((e) => e.data.policy.id === id)
        .map((e) => e.data.change)
        .reverse();
    expect(changesOf('pol_support_read_orders_customers')).toEqual(['created', 'deleted']);
    expect(changesOf('pol_infra_deploy_nonprod')).toEqual(['created']);
    expect((await stopServer(withBundle)).code).toBe(0);
  }, 90_000); // three start-ups of the embedded store, one after another: a hang guard, not a speed limit

  it('--bundle FILE on a fresh data dir seeds the keys and loads that bundle instead of the examples (PORT=0: the printed URL has the bound port)', async () => {
    const fresh = await startServer(join(tmp, 'fresh-bundle'), ['--bundle', bundleFile], { port: 0 });
    expect(fresh.port).toBeGreaterThan(0);
    // The hint printed right after the "listening" line has the bound port too.
    await expect
      .poll(() => fresh.stdout.find((l) => l.startsWith('Try: curl')), { timeout: 5_000 })
      .toContain(`http://${HOST}:${fresh.port}/v1/decisions`);
    const key = testKeyOf(fresh.startup);
    expect(key, fresh.startup.join('\n')).toBeDefined();
    expect(fresh.startup.join('\n')).not.toMatch(/from examples\//);
    await expectBundleActive(fresh, key!);
    expect((await stopServer(fresh)).code).toBe(0);
  });
  it('--bundle with a bundle of a newer format, or no bundle at all, stops at once with a clear message (exit 2)', async () => {
    const newer = join(tmp, 'newer.json');
    writeFileSync(newer, JSON.stringify({ ...bundle, format_version: 2 }));
    for (const [file, message] of [
      [newer, /newer/],
      [join(tmp, 'missing.json'), /no such file/],
    ] as const) {
      const dataDir = join(tmp, 'never-created');
      const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST, AUTHZ_DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
      delete env.DATABASE_URL;
      const child = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve', '--bundle', file], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      running.add(child);
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) =>
        child.once('exit', (c) => (running.delete(child), resolve(c))),
      );
      expect(code).toBe(2);
      expect(stderr).toMatch(/^authz serve: cannot load --bundle /);
      expect(stderr).toMatch(message);
      expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(existsSync(dataDir)).toBe(false); // refused before opening the store
    }
  });
});
