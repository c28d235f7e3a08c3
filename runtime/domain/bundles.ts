/**
 * Bundles (`authz compile` artifacts): replacing an environment's whole policy
 * set atomically, `policy.updated` for each policy that changed; and the
 * active set's hash.
 *
 * A push of any size (AUTHZ_MAX_POLICIES, 100,000 by default) keeps every other
 * tenant's decisions flowing. The bundle is checked, the new set compiled and
 * hashed, and the changes diffed in slices between the requests being served
 * (shared/sliced.ts). The rows and the events are written in chunks of
 * WRITE_CHUNK, under a generation of their own that nobody reads yet; one short
 * transaction makes that generation the active one; then the events move into
 * the events table and the replaced rows are deleted, in chunks again
 * (store/bundle-pushes.ts). No statement holds the store for long, which matters
 * most on the embedded store (one session: a long transaction would stop every
 * other write). The answer comes once all of it is done. A push cut short by a
 * stopped process is finished (it had committed) or undone (it had not) by
 * `recover`, which runs at start and before each push.
 */
import { loadBundleSteps, policySetHash, ROWS_PER_STEP, type Policy } from '../../compiler/index.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { InvalidBundleError, ServiceUnavailableError, TooManyPoliciesError } from '../errors/api-error.js';
import { policyEvent } from '../events/build.js';
import { changeKind } from './policy-change.js';
import { nextTurn, runSliced } from '../shared/sliced.js';
import {
  beginPush,
  claimStagingPush,
  commitPush,
  deleteGeneration,
  endPush,
  moveEvents,
  stageEvents,
  stagePolicies,
  unfinishedPushes,
  unstageEvents,
} from '../store/bundle-pushes.js';
import { CHANNELS, notify, policySetPayload } from '../store/channels.js';
import type { Sql } from '../store/connect.js';
import type { EventRow } from '../store/events.js';
import { loadPolicies, lockPolicySet, readPolicySetVersion } from '../store/policies.js';
import type { Principal, Tenant } from '../tenant.js';
import { diagnosticsToDetails, type PolicySets } from './policy-sets.js';

/** An environment's active set: its hash and size, and (read back) its version. Its public form: presenters/bundle.ts. */
export interface BundleSummary {
  hash: string;
  policies: number;
  version?: number;
}

/** Rows per statement while staging, moving and deleting: each statement stays short. */
export const WRITE_CHUNK = 200;
/** A push whose set keeps changing under it (another push, a policy change) gives up after this many diffs. */
const MAX_ATTEMPTS = 5;
/** A push still staging after this long was left by a stopped process: `recover` undoes it. */
const STALE_PUSH_SECONDS = 3600;

export class BundleService {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly policySets: PolicySets,
    private readonly config: Pick<Config, 'maxPolicies'>,
  ) {}

  /** Replaces the environment's set with the bundle's policies (400 for an invalid or too large bundle). */
  async put(p: Principal, body: unknown): Promise<BundleSummary> {
    const loaded = await runSliced(loadBundleSteps(body));
    if (!loaded.ok) {
      const details = diagnosticsToDetails(loaded.problems);
      throw new InvalidBundleError(`invalid bundle: ${details[0]?.message ?? 'unknown problem'}`, { details });
    }
    const next: Policy[] = loaded.bundle.policies;
    if (next.length > this.config.maxPolicies) {
      throw new TooManyPoliciesError(
        `the bundle has ${next.length} policies; an environment holds at most ${this.config.maxPolicies} (AUTHZ_MAX_POLICIES)`,
      );
    }
    // Checked by loadBundle: compiling the set need not read them again.
    this.policySets.primeReads(loaded.table.rows);
    await this.replace(p, next);
    return { hash: loaded.bundle.hash, policies: next.length };
  }

  /**
   * Replaces the tenant's whole set with `next` (normalised, valid policies: a
   * loaded bundle, or the seeded examples), atomically, with `policy.updated`
   * for each policy that changed. 400 when the set would not compile.
   *
   * @example
   * await services.bundles.replace({ accountId, environment: 'test' }, loadedBundle.policies);
   */
  async replace(tenant: Tenant, next: Policy[]): Promise<void> {
    await this.recover();
    const now = this.clock.now();
    const { table, hash } = await this.policySets.prepare(next);
    const generation = await beginPush(this.sql, tenant);
    let committed: { version: number; replaced: number };
    try {
      await inChunks(next, (chunk) => stagePolicies(this.sql, tenant, generation, chunk, new Date(now)));
      committed = await this.commit(tenant, generation, next, hash, now);
    } catch (error) {
      await this.undo(tenant, generation).catch(() => {});
      throw error;
    }
    this.policySets.adopt(tenant.accountId, tenant.environment, {
      version: committed.version,
      hash,
      table,
      policies: next,
    });
    await this.finish(tenant, generation, committed.replaced);
  }

  /** The active set's hash, count and version. */
  async get(p: Principal): Promise<BundleSummary> {
    const version = await readPolicySetVersion(this.sql, p.accountId, p.environment);
    const policies = (await loadPolicies<Policy>(this.sql, p.accountId, p.environment)).map((r) => r.policy);
    return { hash: policySetHash(policies), policies: policies.length, version: version?.version ?? 0 };
  }

  /** Finishes the pushes that committed and undoes those left staging by a stopped process (start-up; before each push). */
  async recover(): Promise<void> {
    for (const push of await unfinishedPushes(this.sql, STALE_PUSH_SECONDS)) {
      const tenant: Tenant = { accountId: push.account_id, environment: push.environment };
      if (push.state === 'committed') await this.finish(tenant, push.generation, push.replaced_generation);
      else await this.undo(tenant, push.generation);
    }
  }

  /**
   * Diffs against the set in force, stages the events and makes the generation
   * active in one short transaction, provided the set is still the one diffed
   * against; otherwise diffs again.
   */
  private async commit(
    tenant: Tenant,
    generation: number,
    next: Policy[],
    hash: string,
    now: number,
  ): Promise<{ version: number; replaced: number }> {
    let current = await this.current(tenant);
    for (let attempt = 1; ; attempt++) {
      const events = await runSliced(diffSteps(tenant, current.policies, next, now));
      await inChunks(events, (chunk, offset) => stageEvents(this.sql, generation, offset, chunk));
      const expected = current.version;
      const done = await this.sql.begin(async (tx) => {
        const locked = await lockPolicySet(tx, tenant.accountId, tenant.environment);
        if (locked.version !== expected) return null;
        const version = locked.version + 1;
        if (!(await commitPush(tx, tenant, generation, locked.generation, version, hash, new Date(now)))) {
          throw new ServiceUnavailableError('the bundle push was interrupted; nothing changed, push it again');
        }
        await notify(tx, CHANNELS.policies, policySetPayload({ ...tenant, version }));
        return { version, replaced: locked.generation };
      });
      if (done) return done;
      await untilNone(() => unstageEvents(this.sql, generation, WRITE_CHUNK));
      if (attempt === MAX_ATTEMPTS)
        throw new ServiceUnavailableError(
          'the policy set kept changing during the bundle push; nothing changed, push it again',
        );
      await this.policySets.refresh(tenant.accountId, tenant.environment).catch(() => {});
      current = await this.current(tenant);
    }
  }

  /** The set in force and its version: this process's compiled one, or the stored one when that cannot be compiled. */
  private async current(tenant: Tenant): Promise<{ version: number; policies: readonly Policy[] }> {
    try {
      return await this.policySets.get(tenant.accountId, tenant.environment);
    } catch {
      // A stored set that does not compile: a bundle may replace it (the diff needs no table).
      const version = (await readPolicySetVersion(this.sql, tenant.accountId, tenant.environment))?.version ?? 0;
      return {
        version,
        policies: (await loadPolicies<Policy>(this.sql, tenant.accountId, tenant.environment)).map((r) => r.policy),
      };
    }
  }

  /** After commit: the events into `events`, the replaced rows deleted, the push forgotten. */
  private async finish(tenant: Tenant, generation: number, replaced: number | null): Promise<void> {
    await untilNone(() => moveEvents(this.sql, tenant, generation, WRITE_CHUNK));
    if (replaced !== null && replaced !== generation)
      await untilNone(() => deleteGeneration(this.sql, tenant, replaced, WRITE_CHUNK));
    await endPush(this.sql, generation);
  }

  /** A push that never committed: its rows and events deleted (when it is still staging: see claimStagingPush). */
  private async undo(tenant: Tenant, generation: number): Promise<void> {
    if (!(await claimStagingPush(this.sql, generation))) return;
    await untilNone(() => deleteGeneration(this.sql, tenant, generation, WRITE_CHUNK));
    await untilNone(() => unstageEvents(this.sql, generation, WRITE_CHUNK));
  }
}

/** Writes `items` a chunk of WRITE_CHUNK at a time, one statement each, giving the event loop a turn after each. */
async function inChunks<T>(
  items: readonly T[],
  write: (chunk: readonly T[], offset: number) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < items.length; i += WRITE_CHUNK) {
    await write(items.slice(i, i + WRITE_CHUNK), i);
    await nextTurn();
  }
}

/** Runs `step` (one statement on up to WRITE_CHUNK rows) until it finds none left, giving the event loop a turn after each. */
async function untilNone(step: () => Promise<number>): Promise<void> {
  while ((await step()) > 0) await nextTurn();
}

/** `policy.updated` for each policy that differs between the sets (in the order of `before`, then the new ones), in steps. */
function* diffSteps(
  tenant: Tenant,
  before: readonly Policy[],
  after: readonly Policy[],
  now: number,
): Generator<void, EventRow[]> {
  const prior = new Map(before.map((c) => [c.id, c]));
  const next = new Map(after.map((c) => [c.id, c]));
  const events: EventRow[] = [];
  let seen = 0;
  for (const id of new Set([...prior.keys(), ...next.keys()])) {
    const a = prior.get(id);
    const b = next.get(id);
    const change = a === b ? null : changeKind(a, b);
    if (change) events.push(policyEvent(tenant, (b ?? a)!, change, now));
    if (++seen % ROWS_PER_STEP === 0) yield;
  }
  return events;
}
