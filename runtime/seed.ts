/**
 * First start of an empty store (embedded or PostgreSQL; not with AUTHZ_SEED=0):
 * a `default` account, a test and a live key with every scope (printed once:
 * only their hashes are kept), and the example policies (or a bundle) in the
 * test environment, so a newcomer's first curl gets a decision.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  loadBundle,
  findYamlFiles,
  isPolicyFile,
  readSource,
  compileSources,
  type Policy,
  packageRoot,
} from '../compiler/index.js';
import type { Environment } from './tenant.js';
import { createAccount, createApiKey, type CreatedKey } from './domain/accounts.js';
import type { Services } from './services.js';
import { LOCKS, lockFor } from './store/channels.js';
import { countAccounts, findAccountsByName } from './store/accounts.js';

export interface Seeded {
  accountId: string;
  keys: CreatedKey[];
}

/** Creates the default account and keys when the store has no account at all. */
export async function seedIfEmpty(services: Services): Promise<Seeded | null> {
  const sql = services.store.sql;
  return sql.begin(async (tx) => {
    await lockFor(tx, LOCKS.seed);
    if ((await countAccounts(tx)) > 0) return null;
    const at = new Date(services.clock.now());
    const account = await createAccount(tx, 'default', at);
    const keys = [
      await createApiKey(tx, account.id, 'test', ['*'], at),
      await createApiKey(tx, account.id, 'live', ['*'], at),
    ];
    return { accountId: account.id, keys };
  });
}

export async function defaultAccountId(services: Services): Promise<string | undefined> {
  const [row] = await findAccountsByName(services.store.sql, 'default', 1);
  return row?.id;
}

/** The example policy sets shipped in examples/. */
export function examplePolicies(): Policy[] {
  const root = packageRoot();
  const files = findYamlFiles([join(root, 'examples')], root).filter(isPolicyFile);
  const result = compileSources(files.map((f) => readSource(f, root)));
  if (!result.table)
    throw new Error(`examples do not compile: ${result.diagnostics.find((d) => d.severity === 'error')?.message}`);
  return result.policies;
}

/** Policies of a bundle file (authz compile output). */
export function bundlePolicies(path: string): Policy[] {
  const loaded = loadBundle(JSON.parse(readFileSync(path, 'utf8')));
  if (!loaded.ok) throw new Error(`${path}: ${loaded.problems.map((p) => p.message).join('; ')}`);
  return loaded.bundle.policies;
}

/** Replaces an environment's policies (start-up seeding and --bundle), as PUT /v1/bundle does (domain/bundles.ts). */
export async function installPolicies(
  services: Services,
  accountId: string,
  environment: Environment,
  policies: Policy[],
): Promise<void> {
  await services.bundles.replace({ accountId, environment }, policies);
}

/** What {@link seedAtStart} did: the seeded keys (first start only) and the default account, if any. */
export interface StartSeeding {
  seeded: Seeded | null;
  accountId: string | undefined;
}

/**
 * `authz serve`'s seeding: on an empty store (unless `seed` is false) the default
 * account and keys, printed once; then the example policies (first start) or
 * `bundle` (every start with --bundle) into its test environment. Every start
 * names the default account, so that a second start still shows its id.
 */
export async function seedAtStart(
  services: Services,
  options: {
    seed: boolean;
    bundle?: { path: string; policies: Policy[] };
    log: (line: string) => void;
    warn: (line: string) => void;
  },
): Promise<StartSeeding> {
  const { log } = options;
  const seeded = options.seed ? await seedIfEmpty(services) : null;
  if (seeded) {
    log(`Created account "default" (${seeded.accountId}). These keys are shown once; store them now:`);
    for (const k of seeded.keys) log(`  ${k.environment} key: ${k.key}`);
  }
  const accountId = await defaultAccountId(services);
  if (accountId && !seeded)
    log(
      `Account "default": ${accountId} (its keys were printed at its first start; more with authz keys create --account ${accountId})`,
    );
  // An empty store left empty (AUTHZ_SEED=0): how to make the first account and key.
  if (!seeded && !accountId && (await countAccounts(services.store.sql)) === 0) {
    log(
      'The store has no account (AUTHZ_SEED=0 seeds none): make one and its first key with authz keys create --account-name NAME (the operator API: AUTHZ_ADMIN_TOKEN).',
    );
  }
  if (options.bundle && !accountId) {
    options.warn(
      'authz serve: --bundle needs the "default" account, which the first start on an empty store creates (not with AUTHZ_SEED=0); else use PUT /v1/bundle (authz push)',
    );
  }
  if (accountId && (options.bundle || seeded)) {
    const policies = options.bundle?.policies ?? examplePolicies();
    await installPolicies(services, accountId, 'test', policies);
    log(
      `Loaded ${policies.length} policies ${options.bundle ? `from ${options.bundle.path}` : 'from examples/'} into the test environment.`,
    );
  }
  return { seeded, accountId };
}
