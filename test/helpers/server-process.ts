/**
 * For tests that run the real server as a child process (`node bin/authz.js
 * serve`): the build it needs and a free port on 127.0.0.1.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { JsonObject } from './json.js';

export const ROOT = join(import.meta.dirname, '..', '..');
export const SERVE_JS = join(ROOT, 'dist', 'runtime', 'serve.js');
export const HOST = '127.0.0.1';

/** Newest modification time of the .ts sources under `dir`. */
export function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** `npm test` builds first (pretest); a bare `vitest run` builds here when dist/ is missing or older than the sources. */
export function ensureBuilt(): void {
  const stale =
    !existsSync(SERVE_JS) ||
    statSync(SERVE_JS).mtimeMs < Math.max(newestSource(join(ROOT, 'runtime')), newestSource(join(ROOT, 'compiler')));
  if (!stale) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe' });
  } catch (err) {
    // tsc emits even with type errors elsewhere; only a missing output is fatal here.
    if (!existsSync(SERVE_JS)) throw err;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Calls `onLine` with each complete line the stream prints. */
export function eachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) onLine(line);
  });
}

export interface Reply {
  status: number;
  headers: Headers;
  body: JsonObject;
}

/** One JSON request to a server process with a bearer token; a body that is not JSON comes back as `{ raw }`. */
export async function request(
  base: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  let parsed: JsonObject;
  try {
    parsed = text === '' ? {} : (JSON.parse(text) as JsonObject);
  } catch {
    parsed = { raw: text };
  }
  return { status: r.status, headers: r.headers, body: parsed };
}

/** A real `authz serve` on a fresh embedded store, as a new user starts it from the clone. */
export interface FreshServe {
  base: string;
  /** The test key it printed at its first start. */
  testKey: string;
  /** The account it created at its first start (`acc_...`), which the keys belong to. */
  accountId: string;
  /** What it printed (stdout lines, stderr chunks), as it goes on. */
  output: string[];
  /** Stops it (SIGTERM) and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * Starts `node bin/authz.js serve` from the checkout with a temporary data
 * directory (no DATABASE_URL, test clock, operator token or base URL from the
 * caller's environment; `extraEnv` sets some, e.g. AUTHZ_ADMIN_TOKEN), waits
 * for the printed test key and for /healthz.
 */
export async function startFreshServe(dataDirPrefix: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<FreshServe> {
  const dataDir = mkdtempSync(join(tmpdir(), dataDirPrefix));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST,
    AUTHZ_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  for (const k of ['DATABASE_URL', 'AUTHZ_TEST_CLOCK', 'AUTHZ_ADMIN_TOKEN', 'AUTHZ_BASE_URL']) delete env[k];
  Object.assign(env, extraEnv);
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const output: string[] = [];
  try {
    let accountId = '';
    const testKey = await new Promise<string>((resolve, reject) => {
      eachLine(child.stdout!, (line) => {
        output.push(line);
        accountId ||= /Created account "default" \((acc_\w+)\)/.exec(line)?.[1] ?? '';
        const key = /test key: (svc_test_sk_\w+)/.exec(line)?.[1];
        if (key) resolve(key);
      });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
      void exited.then(() => reject(new Error(`authz serve exited:\n${output.join('\n')}`)));
    });
    const base = `http://${HOST}:${port}`;
    // Bounded poll on its readiness.
    for (
      let i = 0;
      !(await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      if (i > 600) throw new Error('authz serve did not answer /healthz');
      await new Promise((r) => setTimeout(r, 100));
    }
    if (accountId === '') throw new Error(`authz serve printed no account:\n${output.join('\n')}`);
    return { base, testKey, accountId, output, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A real `authz serve` child process (bin/authz.js). */
export interface ServeProcess {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node bin/authz.js serve` on `port` with `env` over the caller's
 * environment (without AUTHZ_DATA_DIR, AUTHZ_TEST_CLOCK or
 * AUTHZ_WEBHOOK_ALLOW_PRIVATE unless `env` sets them), LOG_LEVEL warn; resolves
 * once it prints that it listens, rejects if it exits first. `bin` runs another
 * build (test/helpers/old-build.ts: `join(oldBuild(ref), 'bin', 'authz.js')`),
 * from its own checkout. `detached`: in a process group of its own, stopped as
 * a supervisor or a terminal stops one (`process.kill(-child.pid, 'SIGTERM')`).
 */
export async function startServeProcess(
  port: number,
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
  bin = join(ROOT, 'bin', 'authz.js'),
  detached = false,
): Promise<ServeProcess> {
  const full: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST, LOG_LEVEL: 'warn' };
  for (const k of ['AUTHZ_DATA_DIR', 'AUTHZ_TEST_CLOCK', 'AUTHZ_WEBHOOK_ALLOW_PRIVATE']) delete full[k];
  Object.assign(full, env);
  const child = spawn(process.execPath, [bin, 'serve'], {
    cwd: dirname(dirname(bin)),
    env: full,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  await new Promise<void>((resolve, reject) => {
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
      if (line.includes(`listening on http://${HOST}:${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(
          `authz serve exited (${code ?? signal}) before listening; stdout:\n${stdout.join('\n')}\nstderr:\n${stderr.join('')}`,
        ),
      );
    });
  });
  return { child, stdout, stderr, exited };
}

/** SIGTERM, then SIGKILL if it has not stopped within 10 s. */
export async function stopServer(p: ServeProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const late = await Promise.race([
    p.exited.then(() => false),
    new Promise<boolean>((r) => setTimeout(() => r(true), 10_000)),
  ]);
  if (late) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
}
