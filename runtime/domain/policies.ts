/**
 * Policies of an environment: create, replace, read, list, delete and
 * validate. Every change goes through the environment's policy set
 * (policy-sets.ts): one transaction that locks the set, writes the rows,
 * recompiles, bumps the version, stores the `policy.updated` events and
 * notifies the other processes.
 */
import type { Diagnostic, Policy } from '../../compiler/index.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { PolicyConflictError, PolicyNotFoundError, TooManyPoliciesError } from '../errors/api-error.js';
import { policyEvent } from '../events/build.js';
import { invalidPolicyAt, policyFromInput, type PolicyInput } from './policy-input.js';
import { changeKind } from './policy-change.js';
import type { Sql } from '../store/connect.js';
import type { Page, PageParams } from '../store/pagination.js';
import { deletePolicy, findPolicy, listPolicies, upsertPolicy, type PolicyRecord } from '../store/policies.js';
import type { Principal } from '../tenant.js';
import { lintsOf, nameClash, validatePolicy, type PolicyValidation } from './policy-validation.js';
import type { PolicySets } from './policy-sets.js';

export type StoredPolicy = PolicyRecord<Policy>;

/** Names are unique per environment: a clash is a problem of the body's /name. */
function checkNameFree(current: readonly Policy[], policy: Policy, input: PolicyInput): void {
  const clash = nameClash(current, policy, input.locator);
  if (clash) throw invalidPolicyAt(clash);
}

export class PolicyService {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly policySets: PolicySets,
    private readonly config: Pick<Config, 'maxPolicies'> & Partial<Pick<Config, 'retentionDays'>>,
  ) {}

  /**
   * 409 when the id exists; 400 over the policy cap or on a name clash. Answers
   * the stored policy and the lints that concern it in its environment now
   * (`warnings`, as validate reports them: a conflict at the same priority, ...).
   */
  async create(p: Principal, input: PolicyInput): Promise<StoredPolicy & { warnings: Diagnostic[] }> {
    const policy = policyFromInput(input, this.clock.now());
    const now = this.clock.now();
    await this.policySets.change(p.accountId, p.environment, async (tx, current) => {
      if (current.some((c) => c.id === policy.id))
        throw new PolicyConflictError(
          `a policy with id ${policy.id} already exists; use PUT /v1/policies/${policy.id} to replace it`,
        );
      if (current.length >= this.config.maxPolicies) {
        throw new TooManyPoliciesError(
          `this environment already has ${current.length} policies, the most allowed (AUTHZ_MAX_POLICIES=${this.config.maxPolicies}); delete some first`,
        );
      }
      checkNameFree(current, policy, input);
      await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return { policies: [...current, policy], events: [policyEvent(p, policy, 'created', now)], value: null };
    });
    const warnings = await lintsOf(
      await this.policySets.get(p.accountId, p.environment),
      policy.id,
      this.config.retentionDays,
      input.locator,
    );
    return { policy, created_at: new Date(now), updated_at: new Date(now), warnings };
  }

  /** Whole replacement, state included; an unchanged policy keeps its updated_at and fires nothing. */
  async replace(p: Principal, id: string, input: PolicyInput): Promise<StoredPolicy> {
    const policy = policyFromInput(input, this.clock.now(), id);
    const now = this.clock.now();
    return this.policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = current.find((c) => c.id === policy.id);
      if (!before) throw new PolicyNotFoundError(`no policy ${policy.id}; create it with POST /v1/policies`);
      checkNameFree(current, policy, input);
      const change = changeKind(before, policy);
      const record = await findPolicy<Policy>(tx, p.accountId, p.environment, policy.id);
      if (change) await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return {
        policies: current.map((c) => (c.id === policy.id ? policy : c)),
        events: change ? [policyEvent(p, policy, change, now)] : [],
        // Unchanged: the stored updated_at stays, so the answer matches a later GET.
        value: { policy, created_at: record!.created_at, updated_at: change ? new Date(now) : record!.updated_at },
      };
    });
  }

  list(p: Principal, page: PageParams): Promise<Page<StoredPolicy>> {
    return listPolicies<Policy>(this.sql, p.accountId, p.environment, page);
  }

  async get(p: Principal, id: string): Promise<StoredPolicy> {
    const record = await findPolicy<Policy>(this.sql, p.accountId, p.environment, id);
    if (!record) throw new PolicyNotFoundError(`no policy ${id}`);
    return record;
  }

  /** Checks a policy as create or replace would, in this environment; stores nothing. */
  async validate(p: Principal, input: PolicyInput): Promise<PolicyValidation> {
    return validatePolicy(
      await this.policySets.get(p.accountId, p.environment),
      input,
      this.clock.now(),
      this.config.retentionDays,
    );
  }

  /** Removes it; answers the removed policy. */
  async delete(p: Principal, id: string): Promise<Policy> {
    const now = this.clock.now();
    return this.policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = current.find((c) => c.id === id);
      if (!before || !(await deletePolicy(tx, p.accountId, p.environment, id)))
        throw new PolicyNotFoundError(`no policy ${id}`);
      return {
        policies: current.filter((c) => c.id !== id),
        events: [policyEvent(p, before, 'deleted', now)],
        value: before,
      };
    });
  }
}
