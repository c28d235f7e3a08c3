/**
 * A runtime under test: a fresh migrated store of the given kind, services on a
 * manual clock, an app for `inject`, and an account with test and live keys plus
 * a second account (for isolation checks). Each call is independent: its own
 * database (PostgreSQL) or its own in-memory PGlite.
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Policy } from '../../../compiler/policy/types.js';
import { buildApp, type AppOptions } from '../../../runtime/app.js';
import type { Scope } from '../../../runtime/auth/api-keys.js';
import { ManualClock } from '../../../runtime/clock.js';
import { configFromEnv, type Config } from '../../../runtime/config.js';
import type { PermitIssuer } from '../../../runtime/domain/decision-ports.js';
import { createAccount, createApiKey } from '../../../runtime/domain/accounts.js';
import { startBackground, type Background } from '../../../runtime/background/start.js';
import type { LimitMaintenance } from '../../../runtime/background/budgets.js';
import { installPolicies } from '../../../runtime/seed.js';
import { openServices, type Services } from '../../../runtime/services.js';
import { openTestStore, type StoreKind, type TestStore } from '../../helpers/postgres.js';
import type { JsonObject } from '../../helpers/json.js';

export const START = Date.parse('2026-11-21T10:00:00.000Z');
export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';
const HOUR_MS = 3_600_000;

export interface TestRuntime {
  app: FastifyInstance;
  services: Services;
  store: TestStore;
  clock: ManualClock;
  /** The background tasks `authz serve` starts, their rounds far apart (runOnce to force one). */
  background: Background;
  /** The budget sweep and exhausted-agents reload: `background.budgets`. */
  maintenance: LimitMaintenance;
  accountId: string;
  /** Keys of the main account with every scope. */
  testKey: string;
  liveKey: string;
  /** A test key of another account. */
  otherKey: string;
  otherAccountId: string;
  /** Creates a key of the main account with the given scopes. */
  keyWith(scopes: Scope[], environment?: 'test' | 'live'): Promise<string>;
  /** Replaces the environment's policies. */
  setPolicies(
    policies: Array<Partial<Policy> & Pick<Policy, 'effect' | 'actions'>>,
    environment?: 'test' | 'live',
  ): Promise<void>;
  /** inject with the key as a bearer token. */
  call(key: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** GET that must answer 200; the parsed body. */
  getOk<T = JsonObject>(url: string, key?: string): Promise<T>;
  close(): Promise<void>;
}

export interface TestRuntimeOptions {
  config?: Partial<Config>;
  permits?: PermitIssuer;
  /** Use an existing store (restart tests); it is not disposed on close. */
  store?: TestStore;
  /** Options of buildApp (e.g. onRoute to enumerate the routes). */
  app?: AppOptions;
}

export async function startRuntime(kind: StoreKind, options: TestRuntimeOptions = {}): Promise<TestRuntime> {
  const store = options.store ?? (await openTestStore(kind));
  const clock = new ManualClock(START);
  // The manual clock stands still: a test's many requests would all fall in one
  // second of the platform limit, so it is raised (its own tests set it).
  const config: Config = {
    // AUTHZ_SIGN_WORKER passes through: the permit tests run again with tokens signed by the worker thread.
    ...configFromEnv({
      AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
      AUTHZ_KEY_RATE_LIMIT: '1000000',
      AUTHZ_SIGN_WORKER: process.env.AUTHZ_SIGN_WORKER,
    }),
    ...options.config,
  };
  const services = await openServices({
    config,
    store,
    clock,
    ...(options.permits ? { permits: options.permits } : {}),
  });
  const app = await buildApp(services, options.app);
  // As `authz serve` starts them, rounds far apart (the budget sweep each minute, the others hourly, no
  // decision log round at start): tests make their rounds (runOnce, maintainLog) on the manual clock.
  const background = await startBackground(services, {
    budgetSweepMs: 60_000,
    policyRefreshMs: HOUR_MS,
    reviewSweepMs: HOUR_MS,
    logUpkeepMs: HOUR_MS,
    logRoundAtStart: false,
  });
  const maintenance = background.budgets;
  const at = new Date(START);
  const [{ accountId, testKey, liveKey }, other] = options.store
    ? [await existingAccount(services), null]
    : [await newAccount(services, 'main', at), await newAccount(services, 'other', at)];
  const runtime: TestRuntime = {
    app,
    services,
    store,
    clock,
    background,
    maintenance,
    accountId,
    testKey,
    liveKey,
    otherKey: other?.testKey ?? '',
    otherAccountId: other?.accountId ?? '',
    async keyWith(scopes, environment = 'test') {
      return (await createApiKey(store.sql, accountId, environment, scopes, at)).key;
    },
    async setPolicies(policies, environment = 'test') {
      const full = policies.map(
        (p, i) => ({ id: `pol_t${i}`, name: `t${i}`, state: 'enabled', priority: 100, ...p }) as Policy,
      );
      await installPolicies(services, accountId, environment, full);
    },
    call(key, opts) {
      return app.inject({
        ...opts,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(opts.headers ?? {}) },
      });
    },
    async getOk<T = JsonObject>(url: string, key = testKey): Promise<T> {
      const r = await runtime.call(key, { method: 'GET', url });
      expect(r.statusCode, r.body).toBe(200);
      return r.json() as T;
    },
    async close() {
      await background.stop();
      await services.dispatcher.stop();
      await app.close();
      await services.limits.idle();
      await services.writer.idle();
      await services.tracing.shutdown();
      if (!options.store) await store.dispose();
    },
  };
  return runtime;
}

async function newAccount(services: Services, name: string, at: Date) {
  const account = await createAccount(services.store.sql, name, at);
  const testKey = (await createApiKey(services.store.sql, account.id, 'test', ['*'], at)).key;
  const liveKey = (await createApiKey(services.store.sql, account.id, 'live', ['*'], at)).key;
  return { accountId: account.id, testKey, liveKey };
}

/** Restarts reuse the account made by the first start (keys are re-created: only hashes are stored). */
async function existingAccount(services: Services) {
  const [row] = await services.store.sql<Array<{ id: string }>>`select id from accounts where name = 'main'`;
  const at = new Date(START);
  const testKey = (await createApiKey(services.store.sql, row!.id, 'test', ['*'], at)).key;
  const liveKey = (await createApiKey(services.store.sql, row!.id, 'live', ['*'], at)).key;
  return { accountId: row!.id, testKey, liveKey };
}

/** The parsed body of an answer: a JsonObject (test/helpers/json.ts), or the wire type named (`json<Decision>(r)`). */
export const json = <T = JsonObject>(response: LightMyRequestResponse): NoInfer<T> => response.json() as T;
