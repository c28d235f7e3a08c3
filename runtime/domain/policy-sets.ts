/**
 * The compiled decision table of each environment, swapped atomically on change.
 *
 * A change runs in one transaction that locks the environment's policy_sets row,
 * reads the stored policies, applies the change, patches the table for the changed
 * policies (or compiles the whole new set; an invalid result aborts with every
 * problem listed), writes the rows, bumps the
 * version and writes the policy.updated events; after commit this process swaps in
 * the new table, so its very next decision sees it. Other processes learn of the
 * new version through NOTIFY (PostgreSQL) and a periodic version check, read the
 * set from the store and patch their table for the policies that differ.
 */
import type { Diagnostic, Policy, DecisionTable } from '../../compiler/index.js';
import type { Environment } from '../tenant.js';
import type { Clock } from '../clock.js';
import { InvalidPolicyError, ServiceUnavailableError, type ErrorDetail } from '../errors/api-error.js';
import { CHANNELS, notify, policySetPayload } from '../store/channels.js';
import type { Sql, Tx } from '../store/connect.js';
import { insertEvents, type EventRow } from '../store/events.js';
import { bumpPolicySet, loadPolicies, lockPolicySet, readPolicySetVersion } from '../store/policies.js';
import { keepUnchanged, PolicyCompileCache } from './policy-compile-cache.js';

export interface CompiledSet {
  version: number;
  hash: string;
  table: DecisionTable;
  /** The stored policies it was compiled from (treated as immutable: a change replaces objects, never edits them). */
  policies: readonly Policy[];
}

export type TenantKey = `${string}:${Environment}`;
export const tenantKey = (accountId: string, environment: Environment): TenantKey => `${accountId}:${environment}`;

/** Turns compiler diagnostics into the API's error details. */
export function diagnosticsToDetails(diagnostics: readonly Diagnostic[], prefix = ''): ErrorDetail[] {
  return diagnostics
    .filter((d) => d.severity === 'error')
    .map((d) => ({
      path: prefix + (d.path ?? '/'),
      message: d.message,
      ...(d.line !== undefined ? { line: d.line, column: d.col ?? 1 } : {}),
    }));
}

/** Compiles stored (already normalised) policies; they were valid when written. */
export function compileStored(policies: readonly Policy[]): { table?: DecisionTable; diagnostics: Diagnostic[] } {
  return new PolicyCompileCache().compile(policies);
}

export interface ChangeResult<T> {
  /** The complete new set. */
  policies: Policy[];
  events: EventRow[];
  value: T;
}

export class PolicySets {
  private readonly sets = new Map<TenantKey, CompiledSet>();
  private readonly loading = new Map<TenantKey, Promise<CompiledSet>>();
  /** Every load still running (a newer one may have replaced an older one in `loading`). */
  private readonly running = new Set<Promise<unknown>>();
  private readonly cache = new PolicyCompileCache();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  /** The environment's current table (compiled from the store on first use). */
  get(accountId: string, environment: Environment): CompiledSet | Promise<CompiledSet> {
    const key = tenantKey(accountId, environment);
    return this.sets.get(key) ?? this.load(accountId, environment);
  }

  /** Like refresh, but only for environments this process has loaded. */
  async refreshIfLoaded(accountId: string, environment: Environment, version: number): Promise<void> {
    const current = this.sets.get(tenantKey(accountId, environment));
    if (current && version > current.version) await this.load(accountId, environment, true);
  }

  /** Recompiles from the store when the stored version is newer than ours. */
  async refresh(accountId: string, environment: Environment, version?: number): Promise<void> {
    const current = this.sets.get(tenantKey(accountId, environment));
    if (current && version !== undefined && version <= current.version) return;
    await this.load(accountId, environment, true);
  }

  private load(accountId: string, environment: Environment, force = false): Promise<CompiledSet> {
    const key = tenantKey(accountId, environment);
    const pending = this.loading.get(key);
    if (pending && !force) return pending;
    const promise = (async () => {
      const version = await readPolicySetVersion(this.sql, accountId, environment);
      const records = await loadPolicies<Policy>(this.sql, accountId, environment);
      // A refresh (another process changed the set): the held table, patched for the
      // policies that differ from the ones this process holds; else compiled whole.
      const held = this.sets.get(key);
      const policies = held
        ? await keepUnchanged(
            held.policies,
            records.map((r) => r.policy),
          )
        : records.map((r) => r.policy);
      // Fail closed: a stored set that does not compile (written behind the API's
      // back, or by an incompatible version) refuses decisions with 503 until fixed.
      const unloadable = (why: string | undefined) =>
        new ServiceUnavailableError(
          `the policies of this environment cannot be loaded (${why ?? 'unknown problem'}); no decision is made until they are fixed`,
        );
      const patched = held ? this.cache.patch(held, policies) : null;
      const { table, diagnostics } =
        patched ??
        (await this.cache.compileSliced(policies).catch((e: unknown) => {
          throw unloadable(e instanceof Error ? e.message : String(e));
        }));
      if (!table) throw unloadable(diagnostics.find((d) => d.severity === 'error')?.message);
      const set: CompiledSet = {
        version: version?.version ?? 0,
        hash: await this.cache.hashSliced(policies),
        table,
        policies,
      };
      const current = this.sets.get(key);
      if (!current || current.version <= set.version) this.sets.set(key, set);
      return this.sets.get(key)!;
    })();
    this.loading.set(key, promise);
    this.running.add(promise);
    promise.then(
      () => this.running.delete(promise),
      () => this.running.delete(promise),
    );
    promise.then(
      () => this.loading.get(key) === promise && this.loading.delete(key),
      () => this.loading.get(key) === promise && this.loading.delete(key),
    );
    return promise;
  }

  /**
   * Resolves once no load is running: every refresh that a notification or a
   * version check started has finished (tests wait on it instead of sleeping).
   *
   * @example
   * await policySets.idle();
   */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /**
   * Applies a change to the stored set atomically. `mutate` gets the transaction
   * and the stored policies, writes its rows and returns the complete new set.
   */
  async change<T>(
    accountId: string,
    environment: Environment,
    mutate: (tx: Tx, current: Policy[]) => Promise<ChangeResult<T>>,
  ): Promise<T> {
    const key = tenantKey(accountId, environment);
    const { value, set } = await this.sql.begin(async (tx) => {
      const locked = await lockPolicySet(tx, accountId, environment);
      // The set this process holds is the stored one when its version is the locked
      // version: no need to read every policy again (nor to recompile the unchanged ones).
      const mine = this.sets.get(key);
      const current =
        mine && mine.version === locked.version
          ? [...mine.policies]
          : (await loadPolicies<Policy>(tx, accountId, environment)).map((r) => r.policy);
      const result = await mutate(tx, current);
      // The table this process holds, patched for the changed policies; else built whole,
      // in slices: decisions keep being served (on the current table) while it builds.
      const patched = mine && mine.version === locked.version ? this.cache.patch(mine, result.policies) : null;
      const { table, diagnostics } = patched ?? (await this.cache.compileSliced(result.policies));
      if (!table)
        throw new InvalidPolicyError(`the policy set would not be valid: ${diagnostics[0]?.message}`, {
          details: diagnosticsToDetails(diagnostics),
        });
      // In slices too (hashing 100,000 policies takes longer than a decision may wait),
      // while the events are written: the hash is only needed for the bump.
      const hashing = this.cache.hashSliced(result.policies);
      const version = locked.version + 1;
      try {
        await insertEvents(tx, result.events);
      } finally {
        await hashing.catch(() => {});
      }
      const hash = await hashing;
      await bumpPolicySet(tx, accountId, environment, version, hash, new Date(this.clock.now()));
      await notify(tx, CHANNELS.policies, policySetPayload({ accountId, environment, version }));
      return { value: result.value, set: { version, hash, table, policies: result.policies } satisfies CompiledSet };
    });
    const current = this.sets.get(key);
    if (!current || current.version < set.version) this.sets.set(key, set);
    return value as T;
  }

  /**
   * Compiles a complete new set and hashes it, in slices, outside any transaction
   * (a bundle push: domain/bundles.ts); 400 when it would not be valid.
   */
  async prepare(policies: readonly Policy[]): Promise<{ table: DecisionTable; hash: string }> {
    const { table, diagnostics } = await this.cache.compileSliced(policies);
    if (!table)
      throw new InvalidPolicyError(`the policy set would not be valid: ${diagnostics[0]?.message}`, {
        details: diagnosticsToDetails(diagnostics),
      });
    return { table, hash: await this.cache.hashSliced(policies) };
  }

  /** Policies checked by loadBundle need not be read again when compiled (PolicyCompileCache.prime). */
  primeReads(rows: Parameters<PolicyCompileCache['prime']>[0]): void {
    this.cache.prime(rows);
  }

  /** The policy's canonical JSON, kept with the compiled sets' other per-policy work. */
  canonicalOf(policy: Policy): string {
    return this.cache.canonicalOf(policy);
  }

  /** After a change committed outside `change` (a bundle push): this process serves `set` from now on. */
  adopt(accountId: string, environment: Environment, set: CompiledSet): void {
    const key = tenantKey(accountId, environment);
    const current = this.sets.get(key);
    if (!current || current.version < set.version) this.sets.set(key, set);
  }

  /** Forgets every compiled table (tests, reloads). */
  clear(): void {
    this.sets.clear();
  }
}
