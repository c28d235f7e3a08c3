/**
 * `npm run bench:http`: autocannon (50 connections) against POST /v1/decisions on
 * the embedded store and on PostgreSQL (a throwaway cluster with PostgreSQL's
 * default durability), beside a bare Fastify route that parses and returns
 * similar JSON, all in one run. Each target runs in its own process; the load
 * generator runs in this one. Writes bench/http/REPORT.md.
 *
 *   node dist/bench/http/run.js [--duration 10] [--connections 50]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { packageRoot } from '../../compiler/schemas.js';
import { compilerVersion } from '../../compiler/version.js';
import { startCluster } from '../../scripts/pg-cluster.js';

const { values } = parseArgs({ options: { duration: { type: 'string' }, connections: { type: 'string' }, targets: { type: 'string' } } });
const targets = new Set((values.targets ?? 'bare,embedded,postgres').split(','));
const duration = Number(values.duration ?? 10);
const connections = Number(values.connections ?? 50);
const serverScript = fileURLToPath(new URL('./server.js', import.meta.url));

interface Target {
  port: number;
  key: string;
  child: ChildProcess;
}

async function startTarget(args: string[]): Promise<Target> {
  const child = spawn(process.execPath, [serverScript, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`target exited with ${code}`)));
  });
  const { port, key } = JSON.parse(line) as { port: number; key: string };
  return { port, key, child };
}

async function stopTarget(t: Target): Promise<void> {
  t.child.kill('SIGTERM');
  await new Promise((r) => t.child.once('exit', r));
}

interface Result {
  target: string;
  scenario: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

const BODIES = {
  allow: { agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' },
  deny: { agent_id: 'bench-1', action: 'orders.delete', resource: 'order:1' },
};

async function load(t: Target, body: object, warmup = 2): Promise<autocannon.Result> {
  const opts = {
    url: `http://127.0.0.1:${t.port}/v1/decisions`,
    method: 'POST' as const,
    connections,
    headers: { 'content-type': 'application/json', ...(t.key ? { authorization: `Bearer ${t.key}` } : {}) },
    body: JSON.stringify(body),
  };
  await autocannon({ ...opts, duration: warmup });
  return autocannon({ ...opts, duration });
}

async function main(): Promise<void> {
  const results: Result[] = [];
  const record = (target: string, scenario: string, r: autocannon.Result) => {
    results.push({ target, scenario, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx });
    process.stderr.write(`${target} ${scenario}: ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}\n`);
  };

  if (targets.has('bare')) {
    const bare = await startTarget(['--bare']);
    record('bare Fastify', 'parse + return JSON', await load(bare, BODIES.allow));
    await stopTarget(bare);
  }

  if (targets.has('embedded')) {
    const dir = mkdtempSync(join(tmpdir(), 'authz-bench-'));
    const embedded = await startTarget(['--data-dir', join(dir, 'data')]);
    for (const [scenario, body] of Object.entries(BODIES)) record('embedded (PGlite on disk)', scenario, await load(embedded, body));
    await stopTarget(embedded);
    rmSync(dir, { recursive: true, force: true });
  }

  const cluster = targets.has('postgres') ? await startCluster({ durable: true, log: () => {} }) : null;
  if (cluster) try {
    const pg = await startTarget(['--database-url', cluster.url]);
    for (const [scenario, body] of Object.entries(BODIES)) record('PostgreSQL', scenario, await load(pg, body));
    await stopTarget(pg);
    // The same allow decisions without signing a permit token: what tokens cost.
    const noTokens = await startTarget(['--database-url', cluster.url, '--no-permits']);
    record('PostgreSQL', 'allow, no permit token', await load(noTokens, BODIES.allow));
    await stopTarget(noTokens);
  } finally {
    await cluster.stop();
  }

  const bareRps = results.find((r) => r.target === 'bare Fastify')?.rps ?? NaN;
  const lines = [
    '# HTTP benchmark: POST /v1/decisions',
    '',
    `${compilerVersion()}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}; autocannon ${connections} connections, ${duration} s after a 2 s warm-up, target and load generator in separate processes on this machine.`,
    'PostgreSQL: a throwaway local cluster with default durability (fsync, synchronous_commit on). Allow decisions carry an Ed25519 permit token (node:crypto); budgets and rate limits not yet in the path.',
    '',
    '| target | scenario | req/s | p50 ms | p99 ms | vs bare | non-2xx |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...results.map((r) => `| ${r.target} | ${r.scenario} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${((r.rps / bareRps) * 100).toFixed(0)}% | ${r.non2xx + r.errors} |`),
    '',
  ];
  const report = lines.join('\n');
  process.stdout.write(report);
  writeFileSync(join(packageRoot(), 'bench', 'http', 'REPORT.md'), report);
}

await main();
