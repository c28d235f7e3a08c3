/**
 * `npm run bench:http`: autocannon (50 connections) against POST /v1/decisions on
 * the embedded store and on PostgreSQL (a throwaway cluster with PostgreSQL's
 * default durability), beside a bare Fastify route that parses and returns
 * similar JSON, all in one run. Each target runs in its own process; the load
 * generator runs in this one. This module runs the targets; report.ts judges
 * the targets and writes bench/http/REPORT.md from what they measured.
 *
 * Two PostgreSQL targets: the pared-down bench app (server.ts: `buildApp`
 * without the request logger, the background loops or the dispatcher) and
 * `authz serve` as `npm start` runs it (serve-target.ts: its defaults, 200
 * policies), so the report shows what logging, background work and the
 * dispatcher cost. The targets of issue 25/39 are judged on `authz serve`.
 *
 * Allow decisions are measured unconstrained and on policies with a budget and a
 * rate limit that are never reached (server.ts), so every request pays the whole
 * accounting; the report gives constrained / unconstrained. With --rounds N the
 * scenarios of each store run N times interleaved, and the report gives the
 * median of each figure.
 *
 *   node dist/bench/http/run.js [--duration 10] [--connections 50] [--rounds 1] [--targets bare,embedded,postgres,serve,cerbos] [--policies 200]
 *
 * The Cerbos PDP (cerbos.ts) is the peer of issue 51: the same policies, its audit log on and off, two rows each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startCluster } from '../../scripts/pg-cluster.js';
import { BENCH_KEY_RATE_LIMIT } from './policies.js';
import { startReceiver } from './receiver.js';
import { startTarget, stopTarget, type Target } from './target.js';
import { benchPolicySet, startServe } from './serve-target.js';
import { cerbosBody, compareAnswers, startCerbos } from './cerbos.js';
import postgres from 'postgres';
import { clusterPids, cpuOf, machineTicks, mainThreadCpuOf } from './cpu.js';
import { scrapeMetrics, waitsBetween, type Waits } from './waits.js';
import {
  ALLOW,
  CALLS,
  CERBOS_AUDIT,
  CERBOS_NO_AUDIT,
  DENY,
  EMBEDDED,
  FIAT,
  NO_KEY_LIMIT,
  NO_PERMIT,
  SERVE,
  STORE_SCENARIOS,
  TWO_PROCESSES,
  WEBHOOK,
  writeReport,
  type Result,
  type Run,
} from './report.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string' },
    connections: { type: 'string' },
    targets: { type: 'string' },
    rounds: { type: 'string' },
    /** Only the four store scenarios per store (no webhook, no-permit, key-limit-off or two-process rows): for quick comparisons. */
    quick: { type: 'boolean' },
    /** Policies in the `authz serve` target's environment (the bench policies included). */
    policies: { type: 'string' },
  },
});
const targets = new Set((values.targets ?? 'bare,embedded,postgres,serve,cerbos').split(','));
const servePolicies = Number(values.policies ?? 200);
const duration = Number(values.duration ?? 10);
const connections = Number(values.connections ?? 50);
const rounds = Math.max(1, Number(values.rounds ?? 1));
const WARMUP = 2;

/** The request of each scenario (names in report.ts, policies in server.ts). */
const BODIES: Record<string, object> = {
  [ALLOW]: { agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' },
  [DENY]: { agent_id: 'bench-1', action: 'orders.delete', resource: 'order:1' },
  [CALLS]: { agent_id: 'bench-1', action: 'orders.list', resource: 'order:1' },
  [FIAT]: { agent_id: 'bench-1', action: 'orders.pay', resource: 'order:1', amount: 1 },
};

function nonOkCodes(...rs: autocannon.Result[]): Record<string, number> {
  const codes: Record<string, number> = {};
  for (const r of rs) {
    for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) {
      if (!code.startsWith('2') && count) codes[code] = (codes[code] ?? 0) + count;
    }
    if (r.errors) codes.errors = (codes.errors ?? 0) + r.errors;
  }
  return codes;
}

/** Where decisions waited since the scrape `before` (null: the target serves no metrics). */
async function waitsSince(t: Target, before: string | null): Promise<Waits | null> {
  const after = before !== null ? await scrapeMetrics(t.port, t.metricsToken!) : null;
  return before !== null && after !== null ? waitsBetween(before, after) : null;
}

/** The data directory of the PostgreSQL cluster the current target uses (CPU accounting), when there is one. */
let clusterDir: string | null = null;

async function load(t: Target, body: object, conns = connections): Promise<Run> {
  const opts = {
    url: `http://127.0.0.1:${t.port}${t.path ?? '/v1/decisions'}`,
    method: 'POST' as const,
    connections: conns,
    headers: { 'content-type': 'application/json', ...(t.key ? { authorization: `Bearer ${t.key}` } : {}) },
    body: JSON.stringify(body),
  };
  const warm = await autocannon({ ...opts, duration: WARMUP });
  // After the warm-up the pools are full: the backends read now serve the whole run.
  const pgPids = clusterDir ? clusterPids(clusterDir) : [];
  const metrics0 = t.metricsToken ? await scrapeMetrics(t.port, t.metricsToken) : null;
  const [server0, pg0, main0, machine0, t0] = [
    cpuOf([t.child.pid!]),
    cpuOf(pgPids),
    mainThreadCpuOf(t.child.pid!),
    machineTicks(),
    performance.now(),
  ];
  const r = await autocannon({ ...opts, duration });
  const [machine1, elapsedMs] = [machineTicks(), performance.now() - t0];
  const answered = Math.max(1, r['2xx'] + r.non2xx);
  return {
    serverUs: ((cpuOf([t.child.pid!]) - server0) * 1000) / answered,
    pgUs: clusterDir ? ((cpuOf(pgPids) - pg0) * 1000) / answered : null,
    machineBusy: (machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total),
    mainThread: (mainThreadCpuOf(t.child.pid!) - main0) / elapsedMs,
    waits: await waitsSince(t, metrics0),
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: warm['2xx'] + r['2xx'],
    bad: warm.non2xx + warm.errors + r.non2xx + r.errors,
    codes: nonOkCodes(warm, r),
  };
}

interface Usage {
  policy_id: string;
  unit: string;
  consumed: number;
  held: number;
}

/** The target's budget accounting for the bench agent (GET /v1/budgets). */
async function budgets(t: Target): Promise<Usage[]> {
  const res = await fetch(`http://127.0.0.1:${t.port}/v1/budgets?agent_id=bench-1`, {
    headers: { authorization: `Bearer ${t.key}` },
  });
  if (!res.ok) throw new Error(`GET /v1/budgets: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: Usage[] }).data;
}

/** Two loads at once, one per target, half the connections each: the sum of their rates, the worse p50/p99. */
async function loadTwo(a: Target, b: Target, body: object): Promise<Run> {
  const half = Math.max(1, Math.floor(connections / 2));
  const [x, y] = await Promise.all([load(a, body, half), load(b, body, connections - half)]);
  const codes: Record<string, number> = { ...x.codes };
  for (const [c, n] of Object.entries(y.codes)) codes[c] = (codes[c] ?? 0) + n;
  // CPU per request: each side's per-request figure weighted by the requests it answered.
  const share = (a: number, b: number) => (a * x.rps + b * y.rps) / Math.max(1, x.rps + y.rps);
  return {
    rps: x.rps + y.rps,
    p50: Math.max(x.p50, y.p50),
    p99: Math.max(x.p99, y.p99),
    ok: x.ok + y.ok,
    bad: x.bad + y.bad,
    codes,
    serverUs: share(x.serverUs, y.serverUs),
    pgUs: x.pgUs === null || y.pgUs === null ? null : share(x.pgUs, y.pgUs),
    // One machine under both loads at once; each process's main thread, the busier.
    machineBusy: Math.max(x.machineBusy, y.machineBusy),
    mainThread: Math.max(x.mainThread, y.mainThread),
    waits: null,
  };
}

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const results: Result[] = [];
  const notes: string[] = [];
  const checks: string[] = [];
  const record = (target: string, scenario: string, run: Run) => {
    let r = results.find((x) => x.target === target && x.scenario === scenario);
    if (!r) results.push((r = { target, scenario, runs: [] }));
    r.runs.push(run);
    const codes = Object.entries(run.codes)
      .map(([c, n]) => `${c}: ${n}`)
      .join(', ');
    process.stderr.write(
      `${target} ${scenario}: ${run.rps.toFixed(0)} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, CPU/req server ${run.serverUs.toFixed(0)} µs, PostgreSQL ${run.pgUs?.toFixed(0) ?? '-'} µs, machine busy ${(run.machineBusy * 100).toFixed(0)}%, main thread ${(run.mainThread * 100).toFixed(0)}%${run.waits?.writeMs != null ? `, write batch ${run.waits.writeItems!.toFixed(1)} in ${run.waits.writeMs.toFixed(2)} ms` : ''}, non-2xx ${run.bad}${codes ? ` (${codes})` : ''}\n`,
    );
  };
  /** Every scenario on a store, `rounds` times interleaved; then whether the budgets counted every allow. */
  const storeScenarios = async (target: string, t: Target) => {
    for (let i = 0; i < rounds; i++) for (const s of STORE_SCENARIOS) record(target, s, await load(t, BODIES[s]!));
    const usage = await budgets(t);
    for (const [scenario, unit] of [
      [CALLS, 'calls'],
      [FIAT, 'USD'],
    ] as const) {
      const allowed = results
        .find((r) => r.target === target && r.scenario === scenario)!
        .runs.reduce((n, x) => n + x.ok, 0);
      const u = usage.find((x) => x.unit === unit);
      // Requests still in flight when autocannon stops are accounted but not counted: at most `connections` per load.
      const accounted = u ? u.consumed + u.held : 0;
      const consistent = accounted >= allowed && accounted - allowed <= connections * 2 * rounds;
      checks.push(
        `${target}, ${unit} budget: ${u ? `consumed ${u.consumed}, held ${u.held}` : 'no usage row'} for ${allowed} allow answers counted by autocannon, warm-ups included (${consistent ? 'consistent: the excess is at most the requests in flight when each load stopped' : 'INCONSISTENT'}).`,
      );
    }
  };

  /** Allow decisions while this process's dispatcher delivers each decision's event to a receiver. */
  const webhookScenario = async (target: string, args: string[]) => {
    const receiver = await startReceiver();
    const t = await startTarget([...args, '--webhook', receiver.url]);
    for (let i = 0; i < rounds; i++) record(target, WEBHOOK, await load(t, BODIES[ALLOW]!));
    await stopTarget(t);
    const allowed = results
      .find((r) => r.target === target && r.scenario === WEBHOOK)!
      .runs.reduce((n, x) => n + x.ok, 0);
    notes.push(
      `${target}, webhook scenario: ${receiver.count()} deliveries received while ${allowed} allow answers were counted (warm-ups included; the dispatcher is stopped with the target, so events still pending then are not counted).`,
    );
    await receiver.close();
  };

  if (targets.has('bare')) {
    const bare = await startTarget(['--bare']);
    for (let i = 0; i < rounds; i++) record('bare Fastify', 'parse + return JSON', await load(bare, BODIES[ALLOW]!));
    await stopTarget(bare);
  }

  if (targets.has('embedded')) {
    const dir = mkdtempSync(join(tmpdir(), 'authz-bench-'));
    const embedded = await startTarget(['--data-dir', join(dir, 'data')]);
    await storeScenarios(EMBEDDED, embedded);
    await stopTarget(embedded);
    if (!values.quick) await webhookScenario(EMBEDDED, ['--data-dir', join(dir, 'data-webhook')]);
    rmSync(dir, { recursive: true, force: true });
  }

  const cluster =
    targets.has('postgres') || targets.has('serve') ? await startCluster({ durable: true, log: () => {} }) : null;
  if (cluster)
    try {
      clusterDir = cluster.dataDir;
      if (targets.has('postgres')) {
        const pg = await startTarget(['--database-url', cluster.url]);
        await storeScenarios('PostgreSQL', pg);
        await stopTarget(pg);
      }
      if (targets.has('serve')) {
        // Right after the pared-down app, on a database of its own: what the bench app stored does not weigh on it.
        const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
        await admin.unsafe('create database authz_serve');
        await admin.end();
        const serve = await startServe({
          databaseUrl: cluster.url.replace(/\/postgres$/, '/authz_serve'),
          policies: servePolicies,
        });
        await storeScenarios(SERVE, serve);
        await stopTarget(serve);
        notes.push(
          `${SERVE}: \`node bin/authz.js serve\` (what \`npm start\` runs) with its defaults and ${servePolicies} policies in the environment (the bench policies plus generated ones, loaded with PUT /v1/bundle), its stdout (the request log) written to a file; settings not at their defaults: AUTHZ_KEY_RATE_LIMIT=${BENCH_KEY_RATE_LIMIT} (as on the bench app), AUTHZ_ADMIN_TOKEN and AUTHZ_MASTER_KEY (the setup needs them), AUTHZ_METRICS_TOKEN (the bench reads where decisions wait from /metrics: two scrapes per run).`,
        );
      }
      if (targets.has('postgres') && !values.quick) {
        // The same allow decisions without signing a permit token: what tokens cost.
        const noTokens = await startTarget(['--database-url', cluster.url, '--no-permits']);
        for (let i = 0; i < rounds; i++) record('PostgreSQL', NO_PERMIT, await load(noTokens, BODIES[ALLOW]!));
        await stopTarget(noTokens);
        // The same allow decisions with the platform limit off: what its check costs.
        const noKeyLimit = await startTarget(['--database-url', cluster.url, '--key-rate-limit', '0']);
        for (let i = 0; i < rounds; i++) record('PostgreSQL', NO_KEY_LIMIT, await load(noKeyLimit, BODIES[ALLOW]!));
        await stopTarget(noKeyLimit);
        await webhookScenario('PostgreSQL', ['--database-url', cluster.url]);
        // Two server processes on the same database share the same total load.
        const [a, b] = [
          await startTarget(['--database-url', cluster.url]),
          await startTarget(['--database-url', cluster.url]),
        ];
        for (let i = 0; i < rounds; i++) record('PostgreSQL', TWO_PROCESSES, await loadTwo(a, b, BODIES[ALLOW]!));
        await Promise.all([stopTarget(a), stopTarget(b)]);
      }
    } finally {
      await cluster.stop();
      // Targets after this one (the Cerbos peer) use no cluster: no PostgreSQL CPU to read.
      clusterDir = null;
    }

  if (targets.has('cerbos')) {
    // The peer on the same policies as `authz serve`; the requests the load sends are answered alike first.
    const { policies, requests } = benchPolicySet(servePolicies);
    const agents = ['bench-1', ...new Set(requests.map((r) => r.agent_id))];
    const load2 = [BODIES[ALLOW], BODIES[DENY]] as Array<{ agent_id: string; action: string; resource: string }>;
    for (const [name, audit] of [
      [CERBOS_AUDIT, true],
      [CERBOS_NO_AUDIT, false],
    ] as const) {
      const peer = await startCerbos(policies, agents, { audit });
      const same = await compareAnswers(peer, policies, load2, requests);
      for (let i = 0; i < rounds; i++)
        for (const s of [ALLOW, DENY])
          record(
            name,
            s,
            await load(peer, cerbosBody(BODIES[s] as { agent_id: string; action: string; resource: string })),
          );
      await stopTarget(peer);
      notes.push(
        `${name}: the real binary of npm's @cerbos/cerbos-linux-x64 (installed on demand into a cache directory, not a dependency), HTTP check API on 127.0.0.1, telemetry off, ${audit ? 'decision and access audit log on (file backend: a JSON line per check and per call)' : 'audit log off'}; the same ${policies.length} policies translated to principal and resource policies (bench/http/cerbos-policies.ts). The load's allow and deny requests get the same answer from both before timing; of the generated set's ${same.total} requests, ${same.agree} get the same allow/deny from both; of the ${same.total - same.agree} others, ${same.review} are requests where a lower-ranked review policy also matched (as EFFECT_DENY it overrides the allow in Cerbos, where a deny always wins), the rest rank a principal policy above a resource policy as Cerbos does and our priorities do not.`,
      );
    }
  }

  writeReport(results, { connections, duration, warmup: WARMUP, rounds, servePolicies, loadAtStart }, checks, notes);
}

await main();
