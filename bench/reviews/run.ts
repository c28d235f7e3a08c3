/**
 * Reviews bench (`npm run bench:reviews`): 1,000 agents waiting at once with
 * `GET /v1/decisions/:id?wait=60` on one server process (A, in this process, on
 * a throwaway PostgreSQL cluster with default durability), the waiting clients in
 * a child process; the verdicts come through a second server process (B,
 * `authz serve` on the same database), so every wake-up travels through
 * `NOTIFY authz_reviews`. Reports A's memory per waiter (heap after a full GC,
 * and RSS) and the wake-up latency (a verdict's answer from B to the waiter's
 * answer from A; also from the verdict's request) in three shapes:
 *
 * 1. 1,000 waiters on 1,000 decisions, approved through B (16 verdicts in flight);
 * 2. 1,000 waiters on one decision, approved once through B (fan-out);
 * 3. the same through A itself (woken in-process, no NOTIFY needed).
 *
 * Writes bench/reviews/REPORT.md. Needs --expose-gc (the npm script passes it).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../../compiler/index.js';
import { buildApp } from '../../runtime/app.js';
import { configFromEnv } from '../../runtime/config.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { startReviewMaintenance } from '../../runtime/background/reviews.js';
import { openServices } from '../../runtime/services.js';
import { openStore } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { machineTable } from '../machine.js';
import type { WaiterResult } from './waiters.js';

const { values } = parseArgs({ options: { waiters: { type: 'string' } } });
const WAITERS = Number(values.waiters ?? 1000);
const MASTER_KEY = 'bench-reviews-master-key-0123456789';
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}
const fmt = (ms: number) => ms.toFixed(1);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

function rssBytes(): number {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024;
}

/** Heap after full collections, and RSS. */
async function memory(): Promise<{ heap: number; rss: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:reviews does)');
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(50);
  }
  return { heap: process.memoryUsage().heapUsed, rss: rssBytes() };
}

const cluster = await startCluster({ durable: true, log: () => {} });
let serverB: ChildProcess | undefined;
try {
  const setup = await openStore({ databaseUrl: cluster.url, max: 2 });
  await migrate(setup.sql);
  const at = new Date();
  const account = await createAccount(setup.sql, 'bench', at);
  const agentKey = (await createApiKey(setup.sql, account.id, 'test', ['*'], at)).key;
  const reviewerKey = (await createApiKey(setup.sql, account.id, 'test', ['reviews:write'], at)).key;
  await setup.close();

  // A: this process.
  const store = await openStore({ databaseUrl: cluster.url, max: 10 });
  const services = await openServices({
    config: { ...configFromEnv({ AUTHZ_MASTER_KEY: MASTER_KEY }), keyRateLimit: 0 },
    store,
  });
  const app = await buildApp(services);
  const reviews = await startReviewMaintenance(store, services.approvals, services.reviewWaiters, 600_000);
  const baseA = await app.listen({ host: '127.0.0.1', port: 0 });
  const inject = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    app
      .inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload ? { payload } : {}) })
      .then((r) => r.json() as Record<string, any>);
  await inject(agentKey, 'POST', '/v1/policies', {
    name: 'refunds-approved-first',
    effect: 'review',
    actions: ['payments.refund'],
    approval: { required: true, timeout_seconds: 3600 },
  });

  // B: `authz serve` on the same database.
  const portB = 20_000 + Math.floor(Math.random() * 20_000);
  serverB = spawn(process.execPath, [join(packageRoot(), 'bin', 'authz.js'), 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: cluster.url,
      PORT: String(portB),
      HOST: '127.0.0.1',
      AUTHZ_MASTER_KEY: MASTER_KEY,
      AUTHZ_KEY_RATE_LIMIT: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const baseB = `http://127.0.0.1:${portB}`;
  for (let i = 0; ; i++) {
    if (
      await fetch(`${baseB}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 300) throw new Error('server B did not start');
    await sleep(100);
  }

  // The waiting agents' process.
  const clients = fork(join(packageRoot(), 'dist', 'bench', 'reviews', 'waiters.js'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve) => clients.once('message', () => resolve()));
  const hold = (ids: string[]) =>
    new Promise<WaiterResult[]>((resolve, reject) => {
      clients.once('message', (m: { results?: WaiterResult[]; error?: string }) =>
        m.results ? resolve(m.results) : reject(new Error(m.error)),
      );
      clients.send({ base: baseA, key: agentKey, ids, wait: 60 });
    });
  const decide = async (i: number) =>
    (
      await inject(agentKey, 'POST', '/v1/decisions', {
        agent_id: `bench-agent-${i % 50}`,
        action: 'payments.refund',
        amount: 1,
      })
    ).id as string;
  const review = async (base: string, id: string) => {
    const sent = now();
    const r = await fetch(`${base}/v1/decisions/${id}/review`, {
      method: 'POST',
      headers: { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ verdict: 'approve', reviewer: 'bench' }),
    });
    const answered = now();
    if (r.status !== 200) throw new Error(`review ${id}: ${r.status} ${await r.text()}`);
    return { id, sent, answered };
  };
  const untilWaiting = async (n: number) => {
    while (services.reviewWaiters.size < n) await sleep(10);
  };

  interface Shape {
    name: string;
    baseline: { heap: number; rss: number };
    loaded: { heap: number; rss: number };
    fromAnswered: number[];
    fromSent: number[];
    allPending: boolean;
  }
  const shapes: Shape[] = [];

  async function run(
    name: string,
    ids: string[],
    verdicts: () => Promise<Array<{ id: string; sent: number; answered: number }>>,
  ) {
    const baseline = await memory();
    const held = hold(ids);
    await untilWaiting(ids.length);
    const loaded = await memory();
    const reviewed = await verdicts();
    const results = await held;
    const byId = new Map(reviewed.map((r) => [r.id, r]));
    const fromAnswered = results.map((w) => w.at - byId.get(w.id)!.answered).sort((a, b) => a - b);
    const fromSent = results.map((w) => w.at - byId.get(w.id)!.sent).sort((a, b) => a - b);
    shapes.push({
      name,
      baseline,
      loaded,
      fromAnswered,
      fromSent,
      allPending: results.every((w) => w.httpStatus === 200 && w.status === 'pending'),
    });
  }

  // Warm-up: a few round trips of every kind.
  for (let i = 0; i < 20; i++) {
    const id = await decide(i);
    const waiting = hold([id]);
    await untilWaiting(1);
    await review(baseB, id);
    await waiting;
  }

  // 1. One waiter per decision, 1,000 decisions, verdicts through B, 16 in flight.
  const many: string[] = [];
  for (let i = 0; i < WAITERS; i++) many.push(await decide(i));
  await run(
    `${WAITERS} waiters on ${WAITERS} decisions, approved through B (16 verdicts in flight)`,
    many,
    async () => {
      const out: Array<{ id: string; sent: number; answered: number }> = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < many.length) out.push(await review(baseB, many[next++]!));
        }),
      );
      return out;
    },
  );

  // 2 and 3. Every waiter on one decision, approved once, through B then through A.
  for (const [label, base] of [
    ['B (through NOTIFY)', baseB],
    ['A itself (in-process wake)', baseA],
  ] as const) {
    const one = await decide(0);
    const ids = Array.from({ length: WAITERS }, () => one);
    await run(`${WAITERS} waiters on one decision, approved once through ${label}`, ids, async () => [
      await review(base, one),
    ]);
  }

  clients.kill();
  const lines = [
    '# Reviews benchmark: waiting agents',
    '',
    `${WAITERS} agents hold \`GET /v1/decisions/:id?wait=60\` at once on server A (the bench process; the clients run in a child process); the verdicts (\`POST /v1/decisions/:id/review\`) go to server B (\`authz serve\`) on the same PostgreSQL, so A learns of them only through \`NOTIFY authz_reviews\` (one LISTEN per process), except in the last shape. No waiter polls the store: each sleeps until woken, then reads its decision once. Latency is measured with one clock (same machine): from the verdict's answer (and from its request) to the waiter's answer.`,
    '',
    ...machineTable('throwaway cluster, default durability', ['fastify', 'postgres']),
    '',
    `Load average when the run ended (the machine is shared): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} (1 / 5 / 15 min). A, B, the clients and PostgreSQL share the machine's cores.`,
    '',
    "| shape | heap per waiter | RSS per waiter | after the verdict's answer p50 / p99 / max (ms) | after the verdict's request p50 / p99 / max (ms) | every waiter answered pending |",
    '| --- | ---: | ---: | ---: | ---: | --- |',
    ...shapes.map((s) => {
      const n = s.fromAnswered.length;
      const heap = ((s.loaded.heap - s.baseline.heap) / n / 1024).toFixed(1);
      const rss = ((s.loaded.rss - s.baseline.rss) / n / 1024).toFixed(1);
      const q = (v: number[]) => `${fmt(quantile(v, 0.5))} / ${fmt(quantile(v, 0.99))} / ${fmt(v[v.length - 1]!)}`;
      return `| ${s.name} | ${heap} KiB | ${rss} KiB | ${q(s.fromAnswered)} | ${q(s.fromSent)} | ${s.allPending ? 'yes' : 'NO'} |`;
    }),
    '',
    `Heap of A with ${WAITERS} waiters held (first shape): ${mib(shapes[0]!.loaded.heap)} MiB (idle: ${mib(shapes[0]!.baseline.heap)} MiB); RSS ${mib(shapes[0]!.loaded.rss)} MiB (idle: ${mib(shapes[0]!.baseline.rss)} MiB). Per waiter this is the whole held request: its socket, Fastify request and reply, and the registry entry with its timer.`,
    '',
    'A negative latency "after the verdict\'s answer" means the waiter was answered before the reviewer was: the NOTIFY is sent at commit, in parallel with B\'s answer.',
    'With every waiter on one decision, the waiters woken by one wake share one read of the decision; what remains is answering 1,000 HTTP requests at once (and the clients reading them), so the spread is the time A takes to write 1,000 answers on a shared machine.',
    '',
  ];
  const report = lines.join('\n');
  writeFileSync(join(packageRoot(), 'bench', 'reviews', 'REPORT.md'), report);
  process.stdout.write(report);
  await reviews.stop();
  await app.close();
  await services.writer.idle();
  await store.close();
} finally {
  serverB?.kill('SIGTERM');
  await sleep(500);
  await cluster.stop();
}
