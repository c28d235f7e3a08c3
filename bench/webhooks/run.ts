/**
 * Webhook delivery bench (`npm run bench:webhooks`), PostgreSQL (throwaway
 * cluster, default durability), every party in its own process: the receiver
 * (receiver-process.ts, answers 200 at once), the server processes
 * (bench/http/server.ts, and a real `authz serve` with AUTHZ_ROLE=dispatcher)
 * and the load generator (autocannon, in this process). Batches of `--events`
 * events (security.alert rows written straight to the store, each fanned out
 * to one subscribed endpoint by the store's trigger) are delivered:
 *
 * 1. one process, AUTHZ_ROLE=all, nothing else running;
 * 2. the same process while it also answers decisions (autocannon, 50 connections);
 * 3. an AUTHZ_ROLE=api process answering the same decision load and one
 *    AUTHZ_ROLE=dispatcher process delivering.
 *
 * Reports deliveries/s (from the first event written to the last delivery),
 * the event-to-delivery lag, and decisions/s with deliveries beside the same
 * load alone, in the same run. Writes bench/webhooks/REPORT.md and targets.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { packageRoot } from '../../compiler/index.js';
import { eventRow } from '../../runtime/events/build.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { insertEvents } from '../../runtime/store/events.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { clusterPids, cpuOf } from '../http/cpu.js';
import { startTarget, stopTarget, type Target } from '../http/target.js';
import { writeTargets } from '../targets.js';

const { values } = parseArgs({ options: { events: { type: 'string' }, connections: { type: 'string' } } });
const EVENTS = Number(values.events ?? 10_000);
const CONNECTIONS = Number(values.connections ?? 50);
const MASTER_KEY = 'bench-webhooks-master-key-0123456789';

interface BatchStats {
  count: number;
  first: number;
  last: number;
  lags_ms: [number, number, number];
}

/** A child process that prints one JSON line when ready. */
async function startChild(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
  return { child, ready: JSON.parse(line) as Record<string, unknown> };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** `authz serve` as a dispatcher process: resolves once it says it listens. */
async function startDispatcherProcess(databaseUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'authz.js'), 'serve'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      AUTHZ_ROLE: 'dispatcher',
      PORT: '0',
      HOST: '127.0.0.1',
      AUTHZ_MASTER_KEY: MASTER_KEY,
      AUTHZ_WEBHOOK_ALLOW_PRIVATE: '1',
      LOG_LEVEL: 'warn',
    },
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => line.includes('listening on') && resolve());
    child.once('exit', (code) => reject(new Error(`the dispatcher process exited with ${code}`)));
  });
  return child;
}

async function stats(receiverPort: number): Promise<Record<string, BatchStats>> {
  return (await (await fetch(`http://127.0.0.1:${receiverPort}/stats`)).json()) as Record<string, BatchStats>;
}

/** Writes `EVENTS` security.alert events marked `batch` for the account, 1,000 per statement; resolves with when it started. */
async function writeEvents(store: Store, accountId: string, batch: string): Promise<number> {
  const started = Date.now();
  for (let i = 0; i < EVENTS; i += 1000) {
    const now = Date.now();
    const rows = Array.from({ length: Math.min(1000, EVENTS - i) }, (_, j) =>
      eventRow('security.alert', accountId, 'test', now, {
        alert: 'request_volume',
        count: i + j,
        window_seconds: 60,
        threshold: 0,
        bench: batch,
      }),
    );
    await insertEvents(store.sql, rows);
  }
  return started;
}

/** Waits until the receiver has every event of `batch` (or 180 s pass). */
async function delivered(receiverPort: number, batch: string): Promise<BatchStats> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const s = (await stats(receiverPort))[batch];
    if ((s && s.count >= EVENTS) || Date.now() > deadline)
      return s ?? { count: 0, first: NaN, last: NaN, lags_ms: [NaN, NaN, NaN] };
    await new Promise((r) => setTimeout(r, 50));
  }
}

function decisionLoad(t: Target): { stop(): Promise<number> } {
  let finished: (r: autocannon.Result) => void = () => {};
  const done = new Promise<autocannon.Result>((resolve) => (finished = resolve));
  const instance = autocannon(
    {
      url: `http://127.0.0.1:${t.port}/v1/decisions`,
      method: 'POST',
      connections: CONNECTIONS,
      duration: 600,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
      body: JSON.stringify({ agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' }),
    },
    (_error, result) => finished(result),
  );
  return {
    async stop() {
      instance.stop();
      const r = await done;
      return r['2xx'] / Math.max(0.001, r.duration);
    },
  };
}

async function decisionsAlone(t: Target, seconds: number): Promise<number> {
  const r = await autocannon({
    url: `http://127.0.0.1:${t.port}/v1/decisions`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
    body: JSON.stringify({ agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' }),
  });
  return r['2xx'] / r.duration;
}

interface Phase {
  name: string;
  /** CPU per delivery of the process that delivers (µs), and of PostgreSQL (µs; the decisions' share included when they run). */
  dispatcherUs: number;
  pgUs: number;
  receiverUs: number;
  perSecond: number;
  stats: BatchStats;
  decisions: number | null;
  alone: number | null;
}

const cluster = await startCluster({ durable: true, log: () => {} });
const children: ChildProcess[] = [];
const phases: Phase[] = [];
try {
  const receiver = await startChild([join(packageRoot(), 'dist', 'bench', 'webhooks', 'receiver-process.js')]);
  children.push(receiver.child);
  const receiverPort = receiver.ready.port as number;
  const store = await openStore({ databaseUrl: cluster.url, max: 4 });
  const subscribe = async (t: Target) => {
    const r = await fetch(`http://127.0.0.1:${t.port}/v1/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hooks`, events: ['security.alert'] }),
    });
    if (r.status !== 201) throw new Error(`webhook registration: ${r.status} ${await r.text()}`);
  };
  const phase = async (
    name: string,
    t: Target,
    deliverer: number,
    batch: string,
    withDecisions: boolean,
    alone: number | null,
  ) => {
    const load = withDecisions ? decisionLoad(t) : null;
    const pgPids = clusterPids(cluster.dataDir);
    const [cpu0, pg0, rx0] = [cpuOf([deliverer]), cpuOf(pgPids), cpuOf([receiver.child.pid!])];
    const started = await writeEvents(store, t.account!, batch);
    const s = await delivered(receiverPort, batch);
    const per = (ms: number) => (ms * 1000) / Math.max(1, s.count);
    const [dispatcherUs, pgUs, receiverUs] = [
      per(cpuOf([deliverer]) - cpu0),
      per(cpuOf(pgPids) - pg0),
      per(cpuOf([receiver.child.pid!]) - rx0),
    ];
    const decisions = load ? await load.stop() : null;
    const perSecond = (s.count * 1000) / Math.max(1, s.last - started);
    phases.push({ name, perSecond, stats: s, decisions, alone, dispatcherUs, pgUs, receiverUs });
    process.stderr.write(
      `${name}: ${s.count} of ${EVENTS} delivered, ${perSecond.toFixed(0)}/s${decisions === null ? '' : `, decisions ${decisions.toFixed(0)}/s (alone ${alone?.toFixed(0)})`}\n`,
    );
  };

  // 1 and 2: one process that both serves and delivers.
  const all = await startTarget(['--database-url', cluster.url, '--dispatch']);
  children.push(all.child);
  await subscribe(all);
  const aloneAll = await decisionsAlone(all, 5);
  await phase('one process (AUTHZ_ROLE=all), nothing else running', all, all.child.pid!, 'A', false, null);
  await phase('one process (AUTHZ_ROLE=all), answering decisions too', all, all.child.pid!, 'B', true, aloneAll);
  await stopTarget(all);

  // 3: an API process and a dispatcher process.
  const api = await startTarget(['--database-url', cluster.url]);
  children.push(api.child);
  await subscribe(api);
  const aloneApi = await decisionsAlone(api, 5);
  const dispatcher = await startDispatcherProcess(cluster.url);
  children.push(dispatcher);
  await phase(
    'AUTHZ_ROLE=api process answering decisions + AUTHZ_ROLE=dispatcher process',
    api,
    dispatcher.pid!,
    'C',
    true,
    aloneApi,
  );
  await stopChild(dispatcher);
  await stopTarget(api);
  await store.close();

  const split = phases[2]!;
  const lines = [
    '# Webhook delivery benchmark',
    '',
    `Node ${process.version}; PostgreSQL throwaway cluster (fsync on, synchronous_commit on). Every party in its own process: the receiver (answers 200 at once), the server processes, the load generator (autocannon, ${CONNECTIONS} connections, allow decisions with a permit). Each batch: ${EVENTS.toLocaleString('en-US')} security.alert events written to the store 1,000 per statement, one subscribed endpoint; deliveries/s is counted from the first event written to the last delivery received. Dispatcher defaults (256 in flight, 32 per endpoint).`,
    '',
    '| setting | delivered | deliveries/s | lag p50 / p99 / max (ms) | decisions/s meanwhile | decisions/s alone (same process, same run) | CPU per delivery: delivering process / PostgreSQL / receiver (µs) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...phases.map(
      (p) =>
        `| ${p.name} | ${p.stats.count} of ${EVENTS} | ${p.perSecond.toFixed(0)} | ${p.stats.lags_ms.join(' / ')} | ${p.decisions === null ? '-' : p.decisions.toFixed(0)} | ${p.alone === null ? '-' : p.alone.toFixed(0)} | ${p.dispatcherUs.toFixed(0)} / ${p.pgUs.toFixed(0)} / ${p.receiverUs.toFixed(0)} |`,
    ),
    '',
    "CPU per delivery: /proc CPU time of the process that delivers, of the PostgreSQL cluster and of the receiver while the batch was written and delivered, divided by the deliveries (with decisions running, both figures include the decisions' share: the one-process row's process also answers them).",
    '',
    'Target: at least 2,000 deliveries/s on PostgreSQL, with decisions still served.',
    '',
  ];
  const report = lines.join('\n');
  writeFileSync(join(packageRoot(), 'bench', 'webhooks', 'REPORT.md'), report);
  const best = phases[0]!;
  writeTargets('webhooks', [
    {
      target: 'webhooks: >= 2,000 deliveries/s on PostgreSQL (one process, AUTHZ_ROLE=all)',
      measured: `${best.perSecond.toFixed(0)}/s (${best.stats.count} of ${EVENTS})`,
      met: best.perSecond >= 2000 && best.stats.count === EVENTS,
    },
    {
      target: 'webhooks: >= 2,000 deliveries/s with decisions still served (API process + dispatcher process)',
      measured: `${split.perSecond.toFixed(0)}/s while ${split.decisions?.toFixed(0)} decisions/s (alone ${split.alone?.toFixed(0)})`,
      met: split.perSecond >= 2000 && split.stats.count === EVENTS && (split.decisions ?? 0) > 0,
    },
  ]);
  process.stdout.write(report);
} finally {
  for (const c of children) await stopChild(c);
  await cluster.stop();
}
