/**
 * Bundles (`authz compile` artifacts): replacing an environment's whole policy
 * set atomically, `policy.updated` for each policy that changed; and the
 * active set's hash.
 */
import { loadBundle, policySetHash, type Policy } from '../../compiler/index.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { InvalidBundleError, TooManyPoliciesError } from '../errors/api-error.js';
import { policyEvent } from '../events/build.js';
import { changeKind } from '../presenters/policy.js';
import type { Sql } from '../store/connect.js';
import type { EventRow } from '../store/events.js';
import { deleteAllPolicies, loadPolicies, readPolicySetVersion, upsertPolicy } from '../store/policies.js';
import type { Principal } from '../tenant.js';
import { diagnosticsToDetails, type PolicySets } from './policy-sets.js';

export interface BundleSummary {
  object: 'bundle';
  hash: string;
  policies: number;
  version?: number;
}

export class BundleService {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly policySets: PolicySets,
    private readonly config: Pick<Config, 'maxPolicies'>,
  ) {}

  /** Replaces the environment's set with the bundle's policies (400 for an invalid or too large bundle). */
  async put(p: Principal, body: unknown): Promise<BundleSummary> {
    const loaded = loadBundle(body);
    if (!loaded.ok) {
      const details = diagnosticsToDetails(loaded.problems);
      throw new InvalidBundleError(`invalid bundle: ${details[0]?.message ?? 'unknown problem'}`, { details });
    }
    const next: Policy[] = loaded.bundle.policies;
    if (next.length > this.config.maxPolicies) {
      throw new TooManyPoliciesError(`the bundle has ${next.length} policies; an environment holds at most ${this.config.maxPolicies} (AUTHZ_MAX_POLICIES)`);
    }
    const now = this.clock.now();
    await this.policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = new Map(current.map((c) => [c.id, c]));
      const after = new Map(next.map((c) => [c.id, c]));
      const events: EventRow[] = [];
      for (const id of new Set([...before.keys(), ...after.keys()])) {
        const change = changeKind(before.get(id), after.get(id));
        if (change) events.push(policyEvent(p, (after.get(id) ?? before.get(id))!, change, now));
      }
      await deleteAllPolicies(tx, p.accountId, p.environment);
      for (const policy of next) await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return { policies: next, events, value: null };
    });
    return { object: 'bundle', hash: loaded.bundle.hash, policies: next.length };
  }

  /** The active set's hash, count and version. */
  async get(p: Principal): Promise<BundleSummary> {
    const version = await readPolicySetVersion(this.sql, p.accountId, p.environment);
    const policies = (await loadPolicies<Policy>(this.sql, p.accountId, p.environment)).map((r) => r.policy);
    return { object: 'bundle', hash: policySetHash(policies), policies: policies.length, version: version?.version ?? 0 };
  }
}
