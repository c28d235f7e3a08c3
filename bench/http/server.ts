/**
 * A benchmark target process: the runtime on a given store with an account, a
 * key and a small policy set, or (`--bare`) a bare Fastify route that parses and
 * returns similar JSON. Prints one JSON line `{ "port", "key" }` when listening.
 *
 * The platform limit per API key stays on (every request pays for it) but at
 * BENCH_KEY_RATE_LIMIT, so it never answers 429 (`--key-rate-limit 0`: off, to
 * measure what it costs). Policies: policies.ts, plus `--policies N` generated
 * ones. `--webhook URL`: an endpoint subscribed to every event, delivered to by
 * this process's dispatcher. `--stats`: `GET /bench/stats` (no auth, this bench
 * server only) answers the process's `process.memoryUsage()`, after a full GC
 * with `?gc=1` when node runs with --expose-gc (the soak bench).
 */
import Fastify from 'fastify';
import { parseArgs } from 'node:util';
import { buildApp } from '../../runtime/app.js';
import { configFromEnv } from '../../runtime/config.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { installPolicies } from '../../runtime/seed.js';
import { noPermits } from '../../runtime/domain/decision-ports.js';
import { openServices } from '../../runtime/services.js';
import { openStore } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { maintainLog } from '../../runtime/background/decision-log.js';
import { systemClock } from '../../runtime/clock.js';
import { generatePolicySet } from '../compiler/generate.js';
import { BENCH_KEY_RATE_LIMIT, BENCH_POLICIES } from './policies.js';

const { values } = parseArgs({
  options: {
    bare: { type: 'boolean' },
    'database-url': { type: 'string' },
    'data-dir': { type: 'string' },
    'no-permits': { type: 'boolean' },
    'key-rate-limit': { type: 'string' },
    /** Adds a generated set of N policies (bench/compiler/generate.ts) beside the bench policies. */
    policies: { type: 'string' },
    /** Registers a webhook endpoint subscribed to every event at this URL and runs the dispatcher. */
    webhook: { type: 'string' },
    /** GET /bench/stats: process.memoryUsage() of this process (bench/soak). */
    stats: { type: 'boolean' },
    /** Runs this process's webhook dispatcher (with or without --webhook): AUTHZ_ROLE=all (bench/webhooks). */
    dispatch: { type: 'boolean' },
    /** Migrations from this folder instead of the package's (bench/scale: a store from before a migration). */
    'migrations-dir': { type: 'string' },
  },
});

async function main(): Promise<void> {
  if (values.bare) {
    const app = Fastify({ logger: false });
    let n = 0;
    app.post('/v1/decisions', async (request) => {
      const body = request.body as Record<string, unknown>;
      n++;
      return {
        id: `dec_${n.toString(36).padStart(24, '0')}`,
        object: 'decision',
        effect: 'allow',
        reason: 'policy.matched',
        agent_id: body.agent_id,
        action: body.action,
        resource: body.resource ?? null,
        evaluated_at: new Date().toISOString(),
        metadata: { matched_policy_ids: [], warnings: [] },
      };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    process.stdout.write(
      `${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, key: '' })}\n`,
    );
    return;
  }
  const store = await openStore(
    values['database-url']
      ? { databaseUrl: values['database-url'], max: 10 }
      : { dataDir: values['data-dir'] ?? 'memory://' },
  );
  await migrate(store.sql, values['migrations-dir'] ? { dir: values['migrations-dir'] } : {});
  // As authz serve does at start: today's decision log partitions and the next days' (none before migration 015).
  if (!values['migrations-dir']) await maintainLog(store, systemClock, { retentionDays: null });
  const services = await openServices({
    config: configFromEnv({ AUTHZ_KEY_RATE_LIMIT: values['key-rate-limit'] ?? String(BENCH_KEY_RATE_LIMIT) }),
    store,
    ...(values['no-permits'] ? { permits: noPermits } : {}),
  });
  const at = new Date();
  const account = await createAccount(store.sql, 'bench', at);
  const key = (await createApiKey(store.sql, account.id, 'test', ['*'], at)).key;
  const generated = values.policies ? generatePolicySet(Number(values.policies), 1).policies : [];
  await installPolicies(services, account.id, 'test', [...BENCH_POLICIES, ...generated]);
  const app = await buildApp(services);
  if (values.stats)
    app.get<{ Querystring: { gc?: string } }>(
      '/bench/stats',
      async (request) => (request.query.gc === '1' && globalThis.gc?.(), process.memoryUsage()),
    );
  if (values.webhook) {
    const r = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { authorization: `Bearer ${key}` },
      payload: { url: values.webhook, events: ['*'] },
    });
    if (r.statusCode !== 201) throw new Error(`webhook registration: ${r.statusCode} ${r.body}`);
  }
  if (values.webhook || values.dispatch)
    services.dispatcher.start((e) => process.stderr.write(`webhook dispatcher: ${String(e)}\n`));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  process.stdout.write(
    `${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, key, account: account.id })}\n`,
  );
  process.once('SIGTERM', async () => {
    await services.dispatcher.stop();
    await app.close();
    await services.writer.idle();
    await store.close();
    process.exit(0);
  });
}

await main();
