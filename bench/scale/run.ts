/**
 * `npm run bench:scale`: the decision log at scale on PostgreSQL (a throwaway
 * cluster with PostgreSQL's default durability), in one run:
 *
 * 1. decision throughput (autocannon, 50 connections, allow) against an empty store;
 * 2. `--rows` decisions (default 100,000; the report's figure is 10,000,000)
 *    loaded in SQL over `--days` days (30) and `--agents` agents (3,000), one
 *    partition per day (generate.ts);
 * 3. decision throughput again, with them stored;
 * 4. p50/p99 of `GET /v1/decisions?agent_id=` (a random agent each request) and
 *    of `GET /v1/decisions/:id` (a random stored id each request);
 * 5. dropping the oldest day's partition (runtime/store/log-partitions.ts, as retention
 *    does) while decisions run: the drop's duration, and the longest decision
 *    answer during it beside the longest before it.
 *
 * The server is one process (bench/http/server.ts); the load generator runs in
 * this one. Writes bench/scale/REPORT.md.
 *
 * `--before-015`: the same on a store from before migration 015 (no
 * partitions; steps 1-4 only), to compare.
 *
 *   node dist/bench/scale/run.js [--rows 100000] [--days 30] [--agents 3000] [--duration 10] [--connections 50] [--before-015]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { packageRoot } from '../../compiler/index.js';
import { systemClock } from '../../runtime/clock.js';
import { maintainLog } from '../../runtime/background/decision-log.js';
import { openStore } from '../../runtime/store/connect.js';
import { DAY_MS, dropLogPartition } from '../../runtime/store/log-partitions.js';
import { migrate } from '../../runtime/store/migrate.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { startTarget, stopTarget, type Target } from '../http/target.js';
import { generateDecisions } from './generate.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string' },
    days: { type: 'string' },
    agents: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'before-015': { type: 'boolean' },
  },
});
const before015 = values['before-015'] === true;
/** The last main before migration 015 (its newest migration: 014_shadow.sql). */
const BEFORE_015_COMMIT = 'f282b88';
const rows = Number(values.rows ?? 100_000);
const days = Number(values.days ?? 30);
const agents = Number(values.agents ?? 3_000);
const duration = Number(values.duration ?? 10);
const connections = Number(values.connections ?? 50);

const log = (line: string) => process.stderr.write(`${line}\n`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
}

async function measure(t: Target, opts: Partial<autocannon.Options>, seconds = duration): Promise<Figures> {
  const path = (opts as { path?: string }).path ?? '';
  const base = {
    url: `http://127.0.0.1:${t.port}${path}`,
    connections,
    headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
  };
  await autocannon({ ...base, ...opts, duration: 2 } as autocannon.Options);
  const r = await autocannon({ ...base, ...opts, duration: seconds } as autocannon.Options);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    non2xx: r.non2xx + r.errors,
  };
}

const DECIDE = {
  method: 'POST' as const,
  path: '/v1/decisions',
  body: JSON.stringify({ agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' }),
};

function pick<T>(xs: readonly T[]): T {
  return xs[Math.floor(Math.random() * xs.length)]!;
}

/** Decisions under load while `during` runs (started after `afterMs`): the longest answer before it and while it ran. */
async function decideWhile(t: Target, afterMs: number, during: () => Promise<unknown>) {
  const answers: Array<[number, number]> = [];
  const started = performance.now();
  const instance = autocannon({
    url: `http://127.0.0.1:${t.port}${DECIDE.path}`,
    connections,
    duration,
    headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
    ...DECIDE,
  }) as unknown as Promise<autocannon.Result> & { on(event: 'response', f: (...args: never[]) => void): void };
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) =>
    answers.push([performance.now() - started, responseTime]),
  );
  await new Promise((r) => setTimeout(r, afterMs));
  const from = performance.now() - started;
  const outcome = await during();
  const until = performance.now() - started;
  const result = await instance;
  // An answer was waiting during the operation when it finished after it began.
  const overlapping = answers.filter(([at, took]) => at >= from && at - took <= until + 1);
  const before = answers.filter(([at]) => at >= 1000 && at < from);
  return {
    outcome,
    tookMs: until - from,
    maxDuring: Math.max(0, ...overlapping.map(([, took]) => took)),
    maxBefore: Math.max(0, ...before.map(([, took]) => took)),
    rps: result.requests.average,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

async function main(): Promise<void> {
  log(
    `bench:scale: ${rows.toLocaleString('en-US')} decisions over ${days} days, ${agents} agents; load average ${load()}`,
  );
  const cluster = await startCluster({ durable: true, log });
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  await admin.unsafe('create database scale');
  await admin.end();
  const url = cluster.url.replace(/\/postgres$/, '/scale');
  const store = await openStore({ databaseUrl: url, max: 4 });
  let target: Target | undefined;
  try {
    let dir: string | undefined;
    if (before015) {
      // The migrations of the last release before 015 as they were then, function bodies
      // included (since then the functions live in runtime/store/functions/, for the current schema).
      dir = mkdtempSync(join(tmpdir(), 'authz-migrations-'));
      const git = (args: string[]) =>
        execFileSync('git', args, { cwd: packageRoot(), encoding: 'utf8', maxBuffer: 16 << 20 });
      for (const path of git(['ls-tree', '--name-only', BEFORE_015_COMMIT, 'runtime/store/migrations/'])
        .trim()
        .split('\n')) {
        writeFileSync(join(dir, path.split('/').pop()!), git(['show', `${BEFORE_015_COMMIT}:${path}`]));
      }
      await migrate(store.sql, { dir });
    } else {
      await migrate(store.sql);
      // What `authz serve` does at start: today's partitions and two days ahead.
      await maintainLog(store, systemClock, { retentionDays: null });
    }
    target = await startTarget(['--database-url', url, ...(dir ? ['--migrations-dir', dir] : [])]);
    const [account] = await store.sql<Array<{ id: string }>>`select id from accounts where name = 'bench'`;

    log(`1. decisions against an empty store (${duration} s) ...`);
    const empty = await measure(target, DECIDE);
    const emptyLoad = load();

    log(`2. loading ${rows.toLocaleString('en-US')} decisions ...`);
    const loadStarted = performance.now();
    const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const loaded = await generateDecisions(store.sql, {
      accountId: account!.id,
      rows,
      days,
      agents,
      endMs: today,
      log,
      partitioned: !before015,
    });
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const [size] = await store.sql<Array<{ n: number; bytes: number }>>`
      select count(*)::float8 as n, coalesce((select sum(pg_total_relation_size(inhrelid))::float8 from pg_inherits where inhparent = 'decisions'::regclass),
                                             pg_total_relation_size('decisions')::float8) as bytes from decisions`;

    log(`3. decisions with them stored (${duration} s) ...`);
    const full = await measure(target, DECIDE);
    const fullLoad = load();

    log('4. reads ...');
    const agentIds = Array.from({ length: agents }, (_, i) => `agent-${i}`);
    const byAgent = await measure(target, {
      method: 'GET',
      requests: [
        {
          setupRequest: (req: Record<string, unknown>) => ({
            ...req,
            path: `/v1/decisions?agent_id=${pick(agentIds)}`,
          }),
        },
      ],
    } as never);
    const sampleShare = Math.min(100, (20_000 / rows) * 100);
    const ids = (
      await store.sql<
        Array<{ id: string }>
      >`select id from decisions tablesample bernoulli (${sampleShare}) limit 20000`
    ).map((r) => r.id);
    const byId = await measure(target, {
      method: 'GET',
      requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, path: `/v1/decisions/${pick(ids)}` }) }],
    } as never);
    const readLoad = load();

    const fig = (f: Figures) =>
      `${Math.round(f.rps).toLocaleString('en-US')}/s, p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms`;
    if (before015) {
      const report = `# Decision log at scale, before migration 015 (no partitions)

\`npm run bench:scale -- --before-015 --rows ${rows}\` on ${new Date().toISOString().slice(0, 10)}, ${connections} connections, ${duration} s per figure.

| Step | Figure | Load |
|---|---|---|
| Decisions, empty store | ${fig(empty)} | ${emptyLoad} |
| Loading ${size!.n.toLocaleString('en-US')} decisions in SQL (${(size!.bytes / 2 ** 30).toFixed(2)} GiB with indexes) | ${loadSeconds.toFixed(0)} s | |
| Decisions, ${size!.n.toLocaleString('en-US')} stored | ${fig(full)} | ${fullLoad} |
| \`GET /v1/decisions?agent_id=\` | ${fig(byAgent)} | |
| \`GET /v1/decisions/:id\` | ${fig(byId)} | ${readLoad} |
`;
      process.stdout.write(report);
      return;
    }
    log(`5. dropping ${loaded[0]} while decisions run ...`);
    let attempts = 0;
    const drop = await decideWhile(target, 3000, async () => {
      for (;;) {
        attempts++;
        const r = await dropLogPartition(store.sql, 'decisions', loaded[0]!, Date.now(), 20);
        if (r.dropped || !('busy' in r) || attempts >= 50) return r;
      }
    });
    const dropLoad = load();
    const [left] = await store.sql<Array<{ n: number }>>`select count(*)::float8 as n from decisions`;

    const ms = (x: number) => `${x.toFixed(1)} ms`;
    const report = `# Decision log at scale (PostgreSQL)

Generated by \`npm run bench:scale -- --rows ${rows} --days ${days} --agents ${agents}\` on ${new Date().toISOString().slice(0, 10)}
(${connections} connections, ${duration} s per figure, one server process, load generator on the same machine, PostgreSQL
with its default durability). Load average (1, 5, 15 min) after each step.

| Step | Figure | Load |
|---|---|---|
| Decisions (allow + permit), empty store | ${Math.round(empty.rps).toLocaleString('en-US')}/s, p50 ${ms(empty.p50)}, p99 ${ms(empty.p99)}, max ${ms(empty.max)} (${empty.non2xx} non-2xx) | ${emptyLoad} |
| Loading ${size!.n.toLocaleString('en-US')} decisions in SQL (${loaded.length} daily partitions, ${(size!.bytes / 2 ** 30).toFixed(2)} GiB with indexes) | ${loadSeconds.toFixed(0)} s | |
| Decisions (allow + permit), ${size!.n.toLocaleString('en-US')} stored | ${Math.round(full.rps).toLocaleString('en-US')}/s, p50 ${ms(full.p50)}, p99 ${ms(full.p99)}, max ${ms(full.max)} (${full.non2xx} non-2xx) | ${fullLoad} |
| \`GET /v1/decisions?agent_id=\` (random of ${agents} agents) | ${Math.round(byAgent.rps).toLocaleString('en-US')}/s, p50 ${ms(byAgent.p50)}, p99 ${ms(byAgent.p99)} (${byAgent.non2xx} non-2xx) | |
| \`GET /v1/decisions/:id\` (random stored id) | ${Math.round(byId.rps).toLocaleString('en-US')}/s, p50 ${ms(byId.p50)}, p99 ${ms(byId.p99)} (${byId.non2xx} non-2xx) | ${readLoad} |
| Dropping one day (${loaded[0]}) while decisions run | ${JSON.stringify(drop.outcome)} in ${ms(drop.tookMs)} (${attempts} attempt${attempts > 1 ? 's' : ''}); longest decision answer during the drop ${ms(drop.maxDuring)}, before it ${ms(drop.maxBefore)}; ${Math.round(drop.rps).toLocaleString('en-US')}/s, p99 ${ms(drop.p99)} over the run (${drop.non2xx} non-2xx); ${left!.n.toLocaleString('en-US')} decisions left | ${dropLoad} |
`;
    writeFileSync(join(packageRoot(), 'bench', 'scale', 'REPORT.md'), report);
    process.stdout.write(report);
  } finally {
    if (target) await stopTarget(target);
    await store.close();
    await cluster.stop();
  }
}

await main();
