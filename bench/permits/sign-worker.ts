/**
 * `npm run bench:sign-worker`: does signing permit tokens on a worker thread
 * (AUTHZ_SIGN_WORKER=1, runtime/permits/sign-worker.ts) pay on this machine?
 * Two measures, each with the thread off and on, interleaved:
 *
 * - micro: the decision path's issuer (claims, signing input, signature) over
 *   `--tokens` decisions, `--connections` at a time (one event-loop turn each,
 *   as that many connections would send them): µs of main-thread CPU per token
 *   (/proc/self/task/<pid>/schedstat, nanoseconds), of the whole process, and
 *   of wall time;
 * - HTTP: `authz serve` (bench/http/serve-target.ts: its defaults, 200 policies)
 *   on PostgreSQL, the allow scenario of bench/http (every answer signs a
 *   token), autocannon with `--connections` for `--duration` seconds after a
 *   2-second warm-up, `--rounds` rounds; req/s, p50, p99, the server's CPU per
 *   request and its main thread's share, the load average.
 *
 * Both servers run throughout, each on a database of its own; only one is
 * loaded at a time, and the order alternates from round to round. Writes
 * bench/permits/SIGN-WORKER.md.
 *
 *   node dist/bench/permits/sign-worker.js [--duration 8] [--connections 50] [--rounds 3] [--tokens 20000]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { packageRoot } from '../../compiler/index.js';
import type { PermitIssuer } from '../../runtime/domain/decision-ports.js';
import { ringPermitIssuer } from '../../runtime/permits/issuer.js';
import { generateKeyMaterial } from '../../runtime/permits/key-material.js';
import type { KeyRing } from '../../runtime/permits/key-ring.js';
import { SignWorker } from '../../runtime/permits/sign-worker.js';
import { benchDecision } from './decision-row.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { cpuOf, mainThreadCpuOf } from '../http/cpu.js';
import { startServe, type ServeTarget } from '../http/serve-target.js';
import { stopTarget } from '../http/target.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string' },
    connections: { type: 'string' },
    rounds: { type: 'string' },
    tokens: { type: 'string' },
  },
});
const duration = Number(values.duration ?? 8);
const connections = Number(values.connections ?? 50);
const rounds = Math.max(1, Number(values.rounds ?? 3));
const tokens = Number(values.tokens ?? 20_000);
const WARMUP = 2;
const MODES = ['off', 'on'] as const;
type Mode = (typeof MODES)[number];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load1 = () => loadavg()[0]!;

/** Nanoseconds this process's main thread has run (schedstat's first field). */
function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
}

const decision = benchDecision;

interface Micro {
  mainUs: number;
  processUs: number;
  wallUs: number;
}

/** `n` tokens through `issuer`, `connections` per event-loop turn. */
async function micro(issuer: PermitIssuer, n: number): Promise<Micro> {
  const [main0, cpu0, t0] = [mainThreadNs(), process.cpuUsage(), performance.now()];
  for (let i = 0; i < n; i += connections) {
    const turn: Array<string | null | Promise<string | null>> = [];
    for (let j = i; j < Math.min(n, i + connections); j++) turn.push(issuer.issue(decision(j)));
    await Promise.all(turn);
  }
  const cpu = process.cpuUsage(cpu0);
  return {
    mainUs: (mainThreadNs() - main0) / 1000 / n,
    processUs: (cpu.user + cpu.system) / n,
    wallUs: ((performance.now() - t0) * 1000) / n,
  };
}

async function microFigures(): Promise<Record<Mode, Micro[]>> {
  const material = generateKeyMaterial();
  const ring = { signer: () => material } as unknown as KeyRing;
  const worker = new SignWorker();
  const issuers: Record<Mode, PermitIssuer> = {
    off: ringPermitIssuer(ring, 'http://127.0.0.1:8080'),
    on: ringPermitIssuer(ring, 'http://127.0.0.1:8080', worker),
  };
  for (const mode of MODES) await micro(issuers[mode], 2000);
  const out: Record<Mode, Micro[]> = { off: [], on: [] };
  for (let r = 0; r < rounds; r++)
    for (const mode of r % 2 ? [...MODES].reverse() : MODES) {
      const m = await micro(issuers[mode], tokens);
      out[mode].push(m);
      process.stderr.write(
        `micro ${mode}: main thread ${m.mainUs.toFixed(1)} µs/token, process ${m.processUs.toFixed(1)} µs, wall ${m.wallUs.toFixed(1)} µs\n`,
      );
    }
  if (worker.stats.fallback) throw new Error(`the signing thread failed: ${worker.stats.fallback} tokens signed here`);
  await worker.close();
  return out;
}

interface Http {
  rps: number;
  p50: number;
  p99: number;
  serverUs: number;
  /** The server's main-thread CPU per request. */
  mainUs: number;
  mainThread: number;
  loadBefore: number;
  loadAfter: number;
  non2xx: number;
}

async function loadRun(t: ServeTarget): Promise<Http> {
  const opts = {
    url: `http://127.0.0.1:${t.port}/v1/decisions`,
    method: 'POST' as const,
    connections,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
    body: JSON.stringify({ agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' }),
  };
  const loadBefore = load1();
  const warm = await autocannon({ ...opts, duration: WARMUP });
  const [server0, main0, t0] = [cpuOf([t.child.pid!]), mainThreadCpuOf(t.child.pid!), performance.now()];
  const r = await autocannon({ ...opts, duration });
  const [main1, elapsed] = [mainThreadCpuOf(t.child.pid!), performance.now() - t0];
  const answered = Math.max(1, r['2xx'] + r.non2xx);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    serverUs: ((cpuOf([t.child.pid!]) - server0) * 1000) / answered,
    mainUs: ((main1 - main0) * 1000) / answered,
    mainThread: (main1 - main0) / elapsed,
    loadBefore,
    loadAfter: load1(),
    non2xx: warm.non2xx + warm.errors + r.non2xx + r.errors,
  };
}

async function httpFigures(): Promise<Record<Mode, Http[]>> {
  const cluster = await startCluster({ durable: true, log: () => {} });
  const targets: Partial<Record<Mode, ServeTarget>> = {};
  try {
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    for (const mode of MODES) await admin.unsafe(`create database sign_worker_${mode}`);
    await admin.end();
    for (const mode of MODES)
      targets[mode] = await startServe({
        databaseUrl: cluster.url.replace(/\/postgres$/, `/sign_worker_${mode}`),
        policies: 200,
        env: mode === 'on' ? { AUTHZ_SIGN_WORKER: '1' } : {},
      });
    const out: Record<Mode, Http[]> = { off: [], on: [] };
    for (let r = 0; r < rounds; r++)
      for (const mode of r % 2 ? [...MODES].reverse() : MODES) {
        const h = await loadRun(targets[mode]!);
        out[mode].push(h);
        process.stderr.write(
          `http ${mode}: ${h.rps.toFixed(0)} req/s, p50 ${h.p50} ms, p99 ${h.p99} ms, server ${h.serverUs.toFixed(0)} µs CPU/req (main thread ${h.mainUs.toFixed(0)} µs), main thread ${(h.mainThread * 100).toFixed(0)}% busy, load ${h.loadBefore.toFixed(2)} -> ${h.loadAfter.toFixed(2)}, non-2xx ${h.non2xx}\n`,
        );
      }
    return out;
  } finally {
    for (const t of Object.values(targets)) await stopTarget(t);
    await cluster.stop();
  }
}

const label: Record<Mode, string> = { off: 'event loop (default)', on: 'worker thread (AUTHZ_SIGN_WORKER=1)' };
const loadAtStart = load1();
const m = await microFigures();
const h = await httpFigures();
const report = [
  '# Permit signing on a worker thread (issue 51)',
  '',
  `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; load average ${loadAtStart.toFixed(2)} at the start (a shared machine). Off and on interleaved, ${rounds} rounds, medians (every run below).`,
  '',
  `## Main-thread time per token (${tokens} tokens, ${connections} per event-loop turn)`,
  '',
  '| signing | main thread µs/token | whole process µs/token | wall µs/token |',
  '| --- | ---: | ---: | ---: |',
  ...MODES.map(
    (mode) =>
      `| ${label[mode]} | ${median(m[mode].map((x) => x.mainUs)).toFixed(1)} | ${median(m[mode].map((x) => x.processUs)).toFixed(1)} | ${median(m[mode].map((x) => x.wallUs)).toFixed(1)} |`,
  ),
  '',
  `## \`authz serve\` on PostgreSQL, allow with permit, ${connections} connections, ${duration} s after ${WARMUP} s warm-up`,
  '',
  '| signing | req/s | p50 ms | p99 ms | server CPU µs/req | of it, main thread | main thread busy | runs (req/s; load average before -> after) |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ...MODES.map(
    (mode) =>
      `| ${label[mode]} | ${median(h[mode].map((x) => x.rps)).toFixed(0)} | ${median(h[mode].map((x) => x.p50))} | ${median(h[mode].map((x) => x.p99))} | ${median(h[mode].map((x) => x.serverUs)).toFixed(0)} | ${median(h[mode].map((x) => x.mainUs)).toFixed(0)} | ${(median(h[mode].map((x) => x.mainThread)) * 100).toFixed(0)}% | ${h[mode].map((x) => `${x.rps.toFixed(0)}; ${x.loadBefore.toFixed(2)} -> ${x.loadAfter.toFixed(2)}`).join(', ')} |`,
  ),
  '',
].join('\n');
process.stdout.write(report);
writeFileSync(join(packageRoot(), 'bench', 'permits', 'SIGN-WORKER.md'), report);
