/**
 * The Cerbos PDP as a benchmark peer of `POST /v1/decisions`: the real binary
 * of npm's `@cerbos/cerbos-linux-x64`, installed on demand into a cache
 * directory (never a dependency of this package), serving the bench policies
 * translated by cerbos-policies.ts from a disk policy directory, its HTTP API
 * on 127.0.0.1, telemetry off (no traffic leaves the machine). Its decision
 * audit log is on (the file backend, every check and access written as a JSON
 * line, like our stored decisions) or off, one target each.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileItems, evaluate, readPolicyValue, type EvaluationInput, type Policy } from '../../compiler/index.js';
import { cerbosPolicies } from './cerbos-policies.js';
import type { Target } from './target.js';

/** The version measured; the cache holds one install per version. */
export const CERBOS_VERSION = '0.55.0';
const PACKAGE = '@cerbos/cerbos-linux-x64';

/** Where the binary is installed: AUTHZ_BENCH_CACHE, else ~/.cache/agent-authz-bench. */
function cacheDir(): string {
  return join(
    process.env.AUTHZ_BENCH_CACHE ?? join(homedir(), '.cache', 'agent-authz-bench'),
    `cerbos-${CERBOS_VERSION}`,
  );
}

/** The binary's path, installing the package into the cache on first use (npm, from the registry). */
export function ensureCerbos(log: (line: string) => void = () => {}): string {
  const dir = cacheDir();
  const binary = join(dir, 'node_modules', ...PACKAGE.split('/'), 'cerbos-linux-x64');
  if (existsSync(binary)) return binary;
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`the Cerbos peer needs linux-x64 (this is ${process.platform}-${process.arch})`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  log(`installing ${PACKAGE}@${CERBOS_VERSION} into ${dir}`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', `${PACKAGE}@${CERBOS_VERSION}`], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (!existsSync(binary)) throw new Error(`${PACKAGE} installed but ${binary} is missing`);
  return binary;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface CerbosTarget extends Target {
  /** The audit log file (audit on), else null. */
  auditFile: string | null;
}

/** Starts the PDP with `policies` (agent globs expanded to `agents`); resolves once it answers its health check. */
export async function startCerbos(
  policies: readonly Policy[],
  agents: readonly string[],
  o: { audit: boolean },
): Promise<CerbosTarget> {
  const binary = ensureCerbos((l) => process.stderr.write(`${l}\n`));
  const dir = mkdtempSync(join(tmpdir(), 'cerbos-bench-'));
  const policyDir = join(dir, 'policies');
  mkdirSync(policyDir);
  for (const f of cerbosPolicies(policies, agents)) writeFileSync(join(policyDir, f.name), f.text);
  const [http, grpc] = [await freePort(), await freePort()];
  const auditFile = o.audit ? join(dir, 'audit.log') : null;
  const config = [
    'server:',
    `  httpListenAddr: "127.0.0.1:${http}"`,
    `  grpcListenAddr: "127.0.0.1:${grpc}"`,
    'storage:',
    '  driver: disk',
    '  disk:',
    `    directory: ${JSON.stringify(policyDir)}`,
    '    watchForChanges: false',
    'telemetry:',
    '  disabled: true',
    'audit:',
    `  enabled: ${o.audit}`,
    ...(auditFile
      ? [
          '  accessLogsEnabled: true',
          '  decisionLogsEnabled: true',
          '  backend: file',
          '  file:',
          `    path: ${JSON.stringify(auditFile)}`,
        ]
      : []),
  ].join('\n');
  writeFileSync(join(dir, 'cerbos.yaml'), `${config}\n`);
  const child = spawn(binary, ['server', `--config=${join(dir, 'cerbos.yaml')}`], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, CERBOS_NO_TELEMETRY: '1' },
  });
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`cerbos exited with ${child.exitCode} before answering`);
    try {
      const res = await fetch(`http://127.0.0.1:${http}/_cerbos/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300) throw new Error('cerbos did not answer its health check within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port: http, key: '', child, path: '/api/check/resources', auditFile };
}

/** The Cerbos check body for one of our decision requests (resource `kind:id`). */
export function cerbosBody(request: { agent_id: string; action: string; resource?: string | null }): object {
  const resource = request.resource ?? 'none:none';
  const colon = resource.indexOf(':');
  return {
    requestId: 'bench',
    principal: { id: request.agent_id, roles: ['agent'] },
    resources: [
      { actions: [request.action], resource: { kind: resource.slice(0, colon), id: resource.slice(colon + 1) } },
    ],
  };
}

/** The effect Cerbos answers for `request` ('allow' | 'deny'). */
export async function cerbosEffect(
  t: Target,
  request: { agent_id: string; action: string; resource?: string | null },
): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${t.port}${t.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(cerbosBody(request)),
  });
  const body = (await res.json()) as { results?: Array<{ actions: Record<string, string> }> };
  const effect = body.results?.[0]?.actions[request.action];
  if (!res.ok || !effect) throw new Error(`cerbos check: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return effect === 'EFFECT_ALLOW' ? 'allow' : 'deny';
}

/** Our answer as Cerbos can give it: review is not allowed without a human. */
const asAllowDeny = (effect: string) => (effect === 'allow' ? 'allow' : 'deny');

/**
 * Both services' answers to `requests` on the same policies: ours from the
 * compiled table (what `authz serve` answers for them), Cerbos's from its API.
 * `required` must all agree (the requests the load sends); the rest are counted.
 */
export async function compareAnswers(
  t: Target,
  policies: readonly Policy[],
  required: readonly EvaluationInput[],
  others: readonly EvaluationInput[],
): Promise<{ agree: number; total: number; review: number }> {
  const items = policies.flatMap((p, i) => readPolicyValue(p, `/policies/${i}`).items);
  const { table } = compileItems(items, { lint: false });
  if (!table) throw new Error('bench policies do not compile');
  for (const r of required) {
    const [ours, theirs] = [asAllowDeny(evaluate(table, r).effect), await cerbosEffect(t, r)];
    if (ours !== theirs)
      throw new Error(
        `Cerbos answers ${theirs} where authz answers ${ours} for ${JSON.stringify(r)}: not the same policies`,
      );
  }
  // `review`: differences where a review policy also matched (translated to EFFECT_DENY, it overrides a
  // higher-priority allow in Cerbos, where a deny always wins; our ranking lets the allow decide).
  let [agree, review] = [0, 0];
  for (const r of others) {
    const ours = evaluate(table, r);
    if (asAllowDeny(ours.effect) === (await cerbosEffect(t, r))) agree++;
    else if (ours.matched.some((p) => p.effect === 'review')) review++;
  }
  return { agree, total: others.length, review };
}
