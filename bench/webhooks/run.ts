/**
 * Webhook delivery bench (`npm run bench:webhooks`): 10,000 events delivered to
 * a local receiver on a throwaway PostgreSQL cluster (default durability), with
 * decisions served at the same time. Reports deliveries per second, the lag from
 * event to delivery (p50, p99, max) and the decisions/s achieved meanwhile
 * beside the same decision load alone. Writes bench/webhooks/REPORT.md.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../../compiler/index.js';
import { buildApp } from '../../runtime/app.js';
import { configFromEnv } from '../../runtime/config.js';
import { eventRow } from '../../runtime/events/build.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { openServices } from '../../runtime/services.js';
import { openStore } from '../../runtime/store/connect.js';
import { insertEvents } from '../../runtime/store/events.js';
import { migrate } from '../../runtime/store/migrate.js';
import { writeTargets } from '../targets.js';
import { startCluster } from '../../scripts/pg-cluster.js';

const { values } = parseArgs({ options: { events: { type: 'string' } } });
const EVENTS = Number(values.events ?? 10_000);

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** Decisions through inject, `concurrency` at a time, for `ms`; decisions per second. */
async function decisionLoad(app: Awaited<ReturnType<typeof buildApp>>, key: string, ms: number, concurrency = 16): Promise<number> {
  let done = 0;
  const until = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (Date.now() < until) {
        const r = await app.inject({ method: 'POST', url: '/v1/decisions', headers: { authorization: `Bearer ${key}` }, payload: { agent_id: `load-${w}`, action: 'orders.read' } });
        if (r.statusCode === 200) done++;
      }
    }),
  );
  return (done * 1000) / ms;
}

const cluster = await startCluster({ durable: true, log: () => {} });
try {
  const store = await openStore({ databaseUrl: cluster.url, max: 10 });
  await migrate(store.sql);
  const services = await openServices({ config: { ...configFromEnv({}), keyRateLimit: 0 }, store });
  const app = await buildApp(services);
  const at = new Date();
  const account = await createAccount(store.sql, 'bench', at);
  const key = (await createApiKey(store.sql, account.id, 'test', ['*'], at)).key;
  await app.inject({ method: 'POST', url: '/v1/policies', headers: { authorization: `Bearer ${key}` }, payload: { name: 'reads', effect: 'allow', actions: ['orders.read'] } });

  const receivedAt = new Map<string, number>();
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receivedAt.set(String(req.headers['x-service-event-id']), Date.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as { port: number }).port;
  // The bench's events are security alerts nobody else sends, so the decisions' own events are not subscribed.
  await app.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: { authorization: `Bearer ${key}` },
    payload: { url: `http://127.0.0.1:${port}/hooks`, events: ['security.alert'] },
  });

  const alone = await decisionLoad(app, key, 5_000);

  // The events, stored (with their deliveries, by the trigger) in batches of 1,000.
  const createdAt = new Map<string, number>();
  for (let i = 0; i < EVENTS; i += 1000) {
    const now = Date.now();
    const rows = Array.from({ length: Math.min(1000, EVENTS - i) }, (_, j) =>
      eventRow('security.alert', account.id, 'test', now, { alert: 'request_volume', count: i + j, window_seconds: 60, threshold: 0 }),
    );
    await insertEvents(store.sql, rows);
    for (const r of rows) createdAt.set(r.id, now);
  }
  const started = Date.now();
  services.dispatcher.start();
  // Only the bench's own events count (the decision load may fire a real security.alert too).
  const benchDelivered = () => [...receivedAt.keys()].filter((id) => createdAt.has(id)).length;
  while (benchDelivered() < EVENTS && Date.now() - started < 120_000) await new Promise((r) => setTimeout(r, 20));
  const elapsed = (Date.now() - started) / 1000;
  const delivered = benchDelivered();
  const deliveredPerSecond = delivered / elapsed;
  await services.dispatcher.stop();
  const lags = [...receivedAt].filter(([id]) => createdAt.has(id)).map(([id, t]) => t - createdAt.get(id)!).sort((a, b) => a - b);

  // A second batch, delivered while decisions are served.
  receivedAt.clear();
  for (let i = 0; i < EVENTS; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, EVENTS - i) }, (_, j) => eventRow('security.alert', account.id, 'test', Date.now(), { alert: 'request_volume', count: j }));
    await insertEvents(store.sql, rows);
  }
  services.dispatcher.start();
  const t0 = Date.now();
  const withDeliveries = await decisionLoad(app, key, Math.max(1000, Math.round(elapsed * 1000)));
  while (receivedAt.size < EVENTS && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
  const secondElapsed = (Date.now() - t0) / 1000;
  await services.dispatcher.stop();

  const lines = [
    '# Webhook delivery benchmark',
    '',
    `Node ${process.version}; PostgreSQL throwaway cluster (fsync on, synchronous_commit on); receiver on 127.0.0.1 answering 200 at once; one server process, dispatcher defaults (256 in flight, 16 per endpoint); decision load: 16 concurrent injected requests.`,
    '',
    '| measure | value |',
    '| --- | ---: |',
    `| events delivered | first batch ${delivered} of ${EVENTS}, second ${receivedAt.size} of ${EVENTS} |`,
    `| deliveries/s (first batch, no other load) | ${Math.round(deliveredPerSecond)} |`,
    `| lag event -> delivery p50 / p99 / max (ms) | ${quantile(lags, 0.5)} / ${quantile(lags, 0.99)} / ${lags[lags.length - 1]} |`,
    `| deliveries/s (second batch, with decisions) | ${Math.round(EVENTS / secondElapsed)} |`,
    `| decisions/s alone | ${Math.round(alone)} |`,
    `| decisions/s while delivering | ${Math.round(withDeliveries)} |`,
    '',
    'Target: at least 2,000 deliveries/s on PostgreSQL, with decisions still served.',
    '',
  ];
  const report = lines.join('\n');
  writeFileSync(join(packageRoot(), 'bench', 'webhooks', 'REPORT.md'), report);
  writeTargets('webhooks', [
    { target: 'webhooks: >= 2,000 deliveries/s on PostgreSQL', measured: `${Math.round(deliveredPerSecond)}/s (${delivered} of ${EVENTS})`, met: deliveredPerSecond >= 2000 && delivered === EVENTS },
    { target: 'webhooks: decisions still served while delivering', measured: `${Math.round(withDeliveries)} decisions/s (alone ${Math.round(alone)})`, met: withDeliveries > 0 },
  ]);
  process.stdout.write(report);
  await app.close();
  await services.writer.idle();
  await new Promise((r) => receiver.close(r));
  await store.close();
} finally {
  await cluster.stop();
}
