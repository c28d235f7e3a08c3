/**
 * First start of an embedded store: a `default` account, a test and a live key
 * with every scope (printed once: only their hashes are kept), and the example
 * policies (or a bundle) in the test environment, so a newcomer's first curl gets
 * a decision.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBundle, findYamlFiles, isPolicyFile, readSource, compileSources, type Policy, packageRoot } from '../compiler/index.js';
import type { Environment } from './tenant.js';
import { createAccount, createApiKey, type CreatedKey } from './domain/accounts.js';
import type { Services } from './services.js';
import { LOCKS, lockFor } from './store/channels.js';
import { countAccounts } from './store/accounts.js';

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
    const keys = [await createApiKey(tx, account.id, 'test', ['*'], at), await createApiKey(tx, account.id, 'live', ['*'], at)];
    return { accountId: account.id, keys };
  });
}

export async function defaultAccountId(services: Services): Promise<string | undefined> {
  const [row] = await services.store.sql<Array<{ id: string }>>`select id from accounts where name = 'default' order by created_at limit 1`;
  return row?.id;
}

/** The example policy sets shipped in examples/. */
export function examplePolicies(): Policy[] {
  const root = packageRoot();
  const files = findYamlFiles([join(root, 'examples')], root).filter(isPolicyFile);
  const result = compileSources(files.map((f) => readSource(f, root)));
  if (!result.table) throw new Error(`examples do not compile: ${result.diagnostics.find((d) => d.severity === 'error')?.message}`);
  return result.policies;
}

/** Policies of a bundle file (authz compile output). */
export function bundlePolicies(path: string): Policy[] {
  const loaded = loadBundle(JSON.parse(readFileSync(path, 'utf8')));
  if (!loaded.ok) throw new Error(`${path}: ${loaded.problems.map((p) => p.message).join('; ')}`);
  return loaded.bundle.policies;
}

/** Replaces an environment's policies (start-up seeding and --bundle), as PUT /v1/bundle does (domain/bundles.ts). */
export async function installPolicies(services: Services, accountId: string, environment: Environment, policies: Policy[]): Promise<void> {
  await services.bundles.replace({ accountId, environment }, policies);
}
