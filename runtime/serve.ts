/**
 * `authz serve` / `npm start`: configuration from the environment, the store
 * (PostgreSQL with DATABASE_URL, else embedded under AUTHZ_DATA_DIR), migrations,
 * first-start seeding, the HTTP server, replication between processes, and a
 * graceful stop on SIGTERM/SIGINT (stop accepting, finish in-flight requests,
 * flush pending writes, close the store).
 */
import { parseArgs } from 'node:util';
import { buildApp } from './app.js';
import { configFromEnv, ConfigError } from './config.js';
import { startKeyReplication } from './domain/key-replication.js';
import { startReplication } from './domain/replication.js';
import { startReviewMaintenance } from './domain/review-maintenance.js';
import { loggerOptions } from './http/logger.js';
import { startLimitMaintenance } from './limits/maintenance.js';
import { bundlePolicies, defaultAccountId, examplePolicies, installPolicies, seedIfEmpty } from './seed.js';
import { openServices } from './services.js';
import { openStore } from './store/connect.js';
import { migrate } from './store/migrate.js';

export async function serve(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({ args: [...argv], options: { bundle: { type: 'string' } } });
  let config;
  try {
    config = configFromEnv();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`authz serve: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  let bundle;
  try {
    bundle = values.bundle ? bundlePolicies(values.bundle) : undefined;
  } catch (e) {
    // A missing, unreadable or invalid bundle file: a clear message, not a stack trace.
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`authz serve: cannot load --bundle ${message.includes(values.bundle!) ? '' : `${values.bundle}: `}${message}\n`);
    return 2;
  }
  const store = await openStore(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir });
  await migrate(store.sql);
  const services = await openServices({ config, store });
  const log = (line: string) => process.stdout.write(`${line}\n`);
  if (!config.masterKey) {
    const [live] = await store.sql<Array<{ n: number }>>`select count(*)::int as n from api_keys where environment = 'live' and revoked_at is null`;
    if ((live?.n ?? 0) > 0 || store.kind === 'embedded') {
      process.stderr.write(
        '\n*** WARNING: AUTHZ_MASTER_KEY is not set: the Ed25519 keys that sign permit tokens are stored unencrypted.\n' +
          '*** Anyone who can read the store can forge permits for the live environment. Set AUTHZ_MASTER_KEY (16+ characters).\n\n',
      );
    }
  }

  const seeded = store.kind === 'embedded' ? await seedIfEmpty(services) : null;
  if (seeded) {
    log(`Created account "default" (${seeded.accountId}). These keys are shown once; store them now:`);
    for (const k of seeded.keys) log(`  ${k.environment} key: ${k.key}`);
  }
  const accountId = await defaultAccountId(services);
  if (bundle && !accountId) {
    process.stderr.write('authz serve: --bundle needs the "default" account, which only a fresh embedded store creates; with PostgreSQL use PUT /v1/bundle (authz push)\n');
  }
  if (accountId && (bundle || seeded)) {
    const policies = bundle ?? examplePolicies();
    await installPolicies(services, accountId, 'test', policies);
    log(`Loaded ${policies.length} policies ${bundle ? `from ${values.bundle}` : 'from examples/'} into the test environment.`);
  }

  const app = await buildApp(services, {
    logger: loggerOptions({ level: process.env.LOG_LEVEL ?? 'info', secrets: [config.adminToken, config.masterKey, config.metricsToken] }),
  });
  const replication = await startReplication(store, services.policySets, services.agents, 1000, (e) => app.log.error({ err: e }, 'replication'));
  const keyReplication = await startKeyReplication(store, { apiKeys: services.keys, ring: services.ring }, (e) => app.log.error({ err: e }, 'key replication'));
  const maintenance = await startLimitMaintenance(store, services.limits, services.clock, 5000, (e) => app.log.error({ err: e }, 'budget maintenance'));
  const reviews = await startReviewMaintenance(store, services.approvals, services.reviewWaiters, 5000, (e) => app.log.error({ err: e }, 'review maintenance'));
  await app.listen({ port: config.port, host: config.host });
  // The bound port (PORT=0 asks the system for a free one).
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : config.port;
  services.dispatcher.start((e) => app.log.error({ err: e }, 'webhook dispatcher'));
  log(`agent-authz listening on http://${config.host}:${port} (store: ${store.kind === 'embedded' ? `embedded, ${config.dataDir}` : 'PostgreSQL'})`);
  log(`Dashboard: http://${config.host}:${port}/dashboard (sign in with an API key)`);
  if (seeded) {
    const testKey = seeded.keys.find((k) => k.environment === 'test')!.key;
    log(`Try: curl -s http://${config.host}:${port}/v1/decisions -H 'Authorization: Bearer ${testKey}' -H 'Content-Type: application/json' \\`);
    log(`       -d '{"agent_id":"support-bot-1","action":"orders.read","resource":"order:1001"}'`);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal}: stopping`);
    await replication.stop();
    await keyReplication.stop();
    await maintenance.stop();
    await reviews.stop();
    await app.close();
    await services.dispatcher.stop();
    await services.limits.idle();
    await services.writer.idle();
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return 0;
}
