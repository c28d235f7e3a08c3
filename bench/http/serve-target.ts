/**
 * `authz serve` as a benchmark target: the command `npm start` runs (`node
 * bin/authz.js serve`), a child process with its defaults (request logging at
 * its default level into a file, as a user's `npm start > authz.log` would; the
 * background loops; the webhook dispatcher polling), on PostgreSQL. It is set
 * up only through its public interface, so any build with that interface
 * serves (bench:compare runs older commits' builds this way): the operator API
 * creates the account and key, `PUT /v1/bundle` loads the policies (the bench
 * policies of policies.ts plus generated ones up to `policies`).
 *
 * Three settings differ from the defaults, all stated in the reports:
 * AUTHZ_KEY_RATE_LIMIT (the platform limit stays on at BENCH_KEY_RATE_LIMIT, as
 * on the bench app; at its default of 1,000/s one key's load would be answered
 * 429), the operator token and master key, which the setup needs, and
 * AUTHZ_METRICS_TOKEN, so the bench reads where decisions wait from /metrics
 * (two scrapes per run; waits.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  compileItems,
  createBundle,
  packageRoot,
  readPolicyValue,
  type EvaluationInput,
  type Policy,
} from '../../compiler/index.js';
import { generatePolicySet } from '../compiler/generate.js';
import { BENCH_KEY_RATE_LIMIT, BENCH_POLICIES } from './policies.js';
import type { Target } from './target.js';

const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const MASTER_KEY = 'bench-master-key-0123456789';
const METRICS_TOKEN = 'bench-metrics-token-0123456789';

export interface ServeOptions {
  /** PostgreSQL; absent: the embedded store in a fresh data directory. */
  databaseUrl?: string;
  /** The bundle (JSON text) PUT on a first start; default the bench policies (`policies`). */
  bundle?: string;
  /** The package root whose bin/authz.js runs (another build's, for bench:compare); default this one. */
  root?: string;
  /** Arguments to node itself (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Added to the server's environment (e.g. LOG_LEVEL). */
  env?: Record<string, string>;
  /** Policies in the environment, the bench policies included (default 200). */
  policies?: number;
  /** The key of an earlier start on the same database: no setup. */
  key?: string;
  /** Where the server's stdout (its request log) goes; default a file in a fresh temporary directory. */
  logFile?: string;
}

export interface ServeTarget extends Target {
  /** The file the server's stdout is written to. */
  logFile: string;
}

/** The bench policies plus generated ones, `n` in all, and the generated set's requests (for answer checks). */
export function benchPolicySet(n: number): { policies: Policy[]; requests: EvaluationInput[] } {
  const extra = Math.max(0, n - BENCH_POLICIES.length);
  const generated = extra ? generatePolicySet(extra, 1) : { policies: [], requests: [] };
  return { policies: [...BENCH_POLICIES, ...generated.policies], requests: generated.requests };
}

/** The bench policies plus generated ones: `n` policies as a bundle's JSON text. */
export function benchBundle(n: number): string {
  const { policies } = benchPolicySet(n);
  const items = policies.flatMap((p, i) => readPolicyValue(p, `/policies/${i}`).items);
  const compiled = compileItems(items, { lint: false });
  if (!compiled.table) throw new Error(`bench bundle: ${compiled.diagnostics[0]?.message}`);
  return JSON.stringify(createBundle(compiled.table));
}

async function call(
  port: number,
  token: string,
  method: string,
  path: string,
  body: string,
): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Polls the log file for the "listening on http://host:port" line; rejects when the child exits first. */
async function listeningPort(logFile: string, exited: () => number | null): Promise<number> {
  for (;;) {
    const m = /listening on http:\/\/[^:]+:(\d+)/.exec(readFileSync(logFile, 'utf8'));
    if (m) return Number(m[1]);
    const code = exited();
    if (code !== null) throw new Error(`authz serve exited with ${code} before listening (log: ${logFile})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function withoutDatabaseUrl(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DATABASE_URL: _, ...rest } = env;
  return rest;
}

/**
 * Starts `authz serve` on `databaseUrl` (or the embedded store) (PORT=0, HOST=127.0.0.1); on a first
 * start (no `key`) creates the bench account, a test key and the policies.
 */
export async function startServe(o: ServeOptions): Promise<ServeTarget> {
  const root = o.root ?? packageRoot();
  const dir = mkdtempSync(join(tmpdir(), 'authz-serve-'));
  const logFile = o.logFile ?? join(dir, 'authz.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), join(root, 'bin', 'authz.js'), 'serve'], {
    cwd: dir,
    stdio: ['ignore', fd, 'inherit'],
    env: {
      ...withoutDatabaseUrl(process.env),
      ...(o.databaseUrl ? { DATABASE_URL: o.databaseUrl } : {}),
      PORT: '0',
      HOST: '127.0.0.1',
      AUTHZ_DATA_DIR: join(dir, 'data'),
      AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
      AUTHZ_MASTER_KEY: MASTER_KEY,
      AUTHZ_KEY_RATE_LIMIT: String(BENCH_KEY_RATE_LIMIT),
      AUTHZ_METRICS_TOKEN: METRICS_TOKEN,
      ...o.env,
    },
  });
  closeSync(fd);
  const port = await listeningPort(logFile, () => child.exitCode);
  let key = o.key;
  let account: string | undefined;
  if (!key) {
    account = String((await call(port, ADMIN_TOKEN, 'POST', '/admin/accounts', JSON.stringify({ name: 'bench' }))).id);
    key = String(
      (
        await call(
          port,
          ADMIN_TOKEN,
          'POST',
          `/admin/accounts/${account}/api-keys`,
          JSON.stringify({ environment: 'test', scopes: ['*'] }),
        )
      ).key,
    );
    await call(port, key, 'PUT', '/v1/bundle', o.bundle ?? benchBundle(o.policies ?? 200));
  }
  return { port, key, ...(account ? { account } : {}), child, logFile, metricsToken: METRICS_TOKEN };
}
