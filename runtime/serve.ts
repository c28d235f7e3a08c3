/**
 * `authz serve` / `npm start`: configuration from the environment, the master
 * key (AUTHZ_MASTER_KEY, else the key file, generated at the first start, never
 * for a store that already holds sealed secrets), the
 * store (PostgreSQL with DATABASE_URL, else embedded under AUTHZ_DATA_DIR, with a
 * line before and after opening it), migrations,
 * first-start seeding, the HTTP server, replication between processes, and a
 * graceful stop on SIGTERM/SIGINT (stop accepting, finish in-flight requests,
 * flush pending writes, close the store).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readArguments, usageProblem, wantsHelp } from '../compiler/index.js';
import { buildApp } from './app.js';
import { startBackground } from './background/start.js';
import { configFromEnv, ConfigError } from './config.js';
import { describeConnectionLimits, fdSoftLimit } from './http/connection-limits.js';
import { loggerOptions } from './http/logger.js';
import { bundlePolicies, seedAtStart } from './seed.js';
import { listenProblem, portProblem } from './cli/port-check.js';
import { serveUsage } from './cli/serve-help.js';
import { QUIET_LOG_LEVEL, RequestSummary, startRequestSummary } from './http/request-summary.js';
import { MASTER_KEY, MasterKeyError, prepareSealing } from './secrets/sealed-text.js';
import { generateMasterKey, readMasterKey, type MasterKey } from './secrets/master-key.js';
import { openServices } from './services.js';
import { openStore, type Store } from './store/connect.js';
import { heldByStoppingProcess, markStopping, StoreLockedError } from './store/data-dir-lock.js';
import { migrate } from './store/migrate.js';
import { guardStoreOutages } from './outage-guard.js';
import { driverConnectionFile, driverPatched } from './store/driver-patch.js';

/** How often the quiet default log (LOG_LEVEL unset) writes its summary of the requests. */
const SUMMARY_EVERY_MS = 60_000;
import { holdsSealedSecrets } from './store/sealed-secrets.js';

export async function serve(argv: readonly string[]): Promise<number> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${serveUsage()}\n`);
    return 0;
  }
  let values;
  try {
    let positionals;
    ({ values, positionals } = readArguments(argv, { bundle: { type: 'string' } }));
    if (positionals.length > 0)
      throw new Error(`unexpected argument ${JSON.stringify(positionals[0])} (a bundle is given as --bundle FILE)`);
  } catch (e) {
    process.stderr.write(`${usageProblem('serve', (e as Error).message)}\n`);
    return 2;
  }
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
    process.stderr.write(
      `authz serve: cannot load --bundle ${message.includes(values.bundle!) ? '' : `${values.bundle}: `}${message}\n`,
    );
    return 2;
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  // Before the store is opened (seconds on a first start): the port must be free.
  // Taken by a stopping process of the same embedded store (a restart): the store is waited for, then the port.
  const portInUse = await portProblem(config.host, config.port);
  if (portInUse && (config.databaseUrl || !(await heldByStoppingProcess(config.dataDir)))) {
    process.stderr.write(`authz serve: ${portInUse}\n`);
    return 2;
  }
  let master: MasterKey | null;
  try {
    master = readMasterKey(config.masterKey, config.masterKeyFile);
  } catch (e) {
    // An unusable file (too short, not a file) or one that cannot be read.
    if (!(e instanceof Error)) throw e;
    process.stderr.write(`authz serve: cannot use the master key file: ${e.message}\n`);
    return 2;
  }

  let store: Store;
  try {
    store = await openStoreVerbosely(config.databaseUrl, config.dataDir, log);
  } catch (e) {
    // Another process has the embedded store open: exit at once, the store untouched.
    if (!(e instanceof StoreLockedError)) throw e;
    process.stderr.write(`authz serve: ${e.message}\n`);
    return 2;
  }
  // No key: a new one only for a store that holds no sealed secret (a lost key is never silently replaced).
  if (master === null && (await holdsSealedSecrets(store.sql))) {
    await store.close();
    process.stderr.write(
      `authz serve: the store holds secrets sealed under a master key, but AUTHZ_MASTER_KEY is not set and the master key file ${config.masterKeyFile} does not exist.\n` +
        '  Restore that file from your backup (or set AUTHZ_MASTER_KEY_FILE to where it is, or AUTHZ_MASTER_KEY to the key); no new key was written.\n',
    );
    return 2;
  }
  try {
    master ??= generateMasterKey(config.masterKeyFile);
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    await store.close();
    process.stderr.write(`authz serve: cannot write the master key file: ${e.message}\n`);
    return 2;
  }
  config = { ...config, masterKey: master.secret };
  prepareSealing(master.secret);
  if (master.source === 'generated') {
    log(
      `Generated a master key in ${master.path} (mode 0600): it seals the permit signing keys and webhook secrets at rest.`,
    );
    log(
      '  Back it up with the data: without it they cannot be opened. Every process on one store needs the same key (AUTHZ_MASTER_KEY or this file).',
    );
  } else if (master.source === 'file') {
    log(`Master key: ${master.path}`);
  }

  let services;
  try {
    services = await openServices({ config, store });
  } catch (e) {
    if (!(e instanceof MasterKeyError)) throw e;
    await store.close();
    // Name what was tried: the variable, or the file.
    const from = master.source === 'env' ? 'AUTHZ_MASTER_KEY' : `the master key file ${master.path}`;
    process.stderr.write(
      `authz serve: ${e.message.replace(MASTER_KEY, from)}\n  (the master key used: ${from}; secrets sealed under another key need that key: set AUTHZ_MASTER_KEY or AUTHZ_MASTER_KEY_FILE)\n`,
    );
    return 2;
  }
  // A bundle push cut short by a stop: finished when it had committed, else undone.
  await services.bundles.recover();

  const { seeded } = await seedAtStart(services, {
    seed: config.seed && config.role !== 'dispatcher',
    ...(bundle ? { bundle: { path: values.bundle!, policies: bundle } } : {}),
    log,
    warn: (line) => process.stderr.write(`${line}\n`),
  });
  if (!config.adminToken)
    log('Operator API (/admin): off; set AUTHZ_ADMIN_TOKEN (16+ characters) to create accounts and keys (authz keys).');

  // AUTHZ_ROLE: a dispatcher process answers only the health routes and runs nothing but the dispatcher.
  const { role } = config;
  // LOG_LEVEL unset: the quiet default (errors, and a summary of the requests a minute); set: pino at that level.
  const summary = config.logLevel === undefined ? new RequestSummary() : undefined;
  const app = await buildApp(services, {
    logger: loggerOptions({
      level: config.logLevel ?? QUIET_LOG_LEVEL,
      secrets: [config.adminToken, config.masterKey, config.metricsToken],
    }),
    healthOnly: role === 'dispatcher',
    ...(summary ? { requestSummary: summary } : {}),
  });
  const summaryLines = summary
    ? startRequestSummary(summary, SUMMARY_EVERY_MS, () => services.clock.now(), log)
    : undefined;
  const onError = (what: string) => (e: unknown) => app.log.error({ err: e }, what);
  // Whatever the database connections do, a store outage never ends the process (docs/operations.md, Failover).
  guardStoreOutages((reason) =>
    app.log.warn({ err: reason }, 'store unavailable (an unhandled rejection): still serving'),
  );
  // Policy refresh, key replication, budget upkeep, review sweep, decision log upkeep (runtime/background/).
  const background =
    role === 'dispatcher' ? null : await startBackground(services, { onError: (task, e) => onError(task)(e) });
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (e) {
    // Taken between the check and now: the same sentence, the store closed cleanly.
    const problem = listenProblem(e, config.host, config.port);
    if (!problem) throw e;
    process.stderr.write(`authz serve: ${problem}\n`);
    await background?.stop();
    await app.close();
    await services.writer.idle();
    await store.close();
    return 2;
  }
  // The bound port (PORT=0 asks the system for a free one).
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : config.port;
  if (role !== 'api') services.dispatcher.start(onError('webhook dispatcher'));
  const roleNote =
    role === 'all'
      ? ''
      : role === 'api'
        ? ', role api: sends no webhooks'
        : ', role dispatcher: sends webhooks, answers /healthz and /readyz only';
  log(
    describeConnectionLimits(app.server.maxConnections, config.maxConnections, fdSoftLimit(), config.requestTimeoutMs),
  );
  log(
    `agent-authz listening on http://${config.host}:${port} (store: ${store.kind === 'embedded' ? `embedded, ${config.dataDir}` : 'PostgreSQL'}${roleNote})`,
  );
  if (role !== 'dispatcher') log(`Dashboard: http://${config.host}:${port}/dashboard (sign in with an API key)`);
  if (seeded) {
    const testKey = seeded.keys.find((k) => k.environment === 'test')!.key;
    log(
      `Try: curl -s http://${config.host}:${port}/v1/decisions -H 'Authorization: Bearer ${testKey}' -H 'Content-Type: application/json' \\`,
    );
    log(`       -d '{"agent_id":"support-bot-1","action":"orders.read","resource":"order:1001"}'`);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // A process starting on the same embedded store waits for it instead of giving up.
    markStopping();
    app.log.info(`${signal}: stopping`);
    await background?.stop();
    summaryLines?.stop();
    await app.close();
    await services.dispatcher.stop();
    await services.limits.idle();
    await services.writer.idle();
    await services.tracing.shutdown().catch(() => {});
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return 0;
}

/**
 * Opens and migrates the store; the embedded store says what it does, as a first
 * start spends seconds creating the database:
 *
 *   Creating the embedded store in /srv/.authz (first start) ...
 *   Embedded store ready in 4.1 s.
 */
async function openStoreVerbosely(
  databaseUrl: string | undefined,
  dataDir: string,
  log: (line: string) => void,
): Promise<Store> {
  if (databaseUrl) {
    if (!driverPatched()) {
      process.stderr.write(
        `authz serve: warning: postgres.js at ${driverConnectionFile()} lacks patches/postgres+3.4.9.patch (installed with --ignore-scripts?): a dropped database connection can end this process; run \`npx patch-package\` (docs/operations.md, The patched driver)\n`,
      );
    }
    const store = await openStore({ databaseUrl });
    await migrate(store.sql);
    return store;
  }
  const fresh = !existsSync(join(dataDir, 'PG_VERSION'));
  log(
    fresh
      ? `Creating the embedded store in ${dataDir} (first start) ...`
      : `Opening the embedded store in ${dataDir} ...`,
  );
  const started = performance.now();
  const store = await openStore({ dataDir, onLockWait: log });
  await migrate(store.sql);
  log(`Embedded store ready in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  return store;
}
