/** The public form of a policy (JSON resource or YAML document), and what changed between two versions of one. */
import { stringify } from 'yaml';
import { canonicalPolicy, type Diagnostic, type Policy } from '../../compiler/index.js';
import type { Deleted, Policy as PolicyBody, PolicyCreated } from '../../clients/typescript/wire.js';
import type { Environment } from '../tenant.js';
import { diagnosticResource } from './policy-validation.js';

/** The policy resource: the policy, `object`, `livemode` and its timestamps. */
export function policyResource(policy: Policy, environment: Environment, createdAt: Date, updatedAt: Date): PolicyBody {
  return {
    ...policy,
    object: 'policy',
    livemode: environment === 'live',
    created_at: createdAt.toISOString(),
    updated_at: updatedAt.toISOString(),
  };
}

/** POST /v1/policies' answer: the policy resource and the lints that concern it in its environment (`[]` when none). */
export function createdPolicyResource(
  policy: Policy,
  environment: Environment,
  at: Date,
  warnings: readonly Diagnostic[],
): PolicyCreated {
  return { ...policyResource(policy, environment, at, at), warnings: warnings.map(diagnosticResource) };
}

/**
 * DELETE /v1/policies/:id.
 *
 * @example
 * deletedPolicyResource('pol_1'); // => { id: 'pol_1', object: 'policy', deleted: true }
 */
export function deletedPolicyResource(id: string): Deleted {
  return { id, object: 'policy', deleted: true };
}

/**
 * A policy in a `policy.updated` event's body: as in a policy file, with `object`.
 *
 * @example
 * policyInEvent(policy).object; // => 'policy'
 */
export function policyInEvent(policy: object): Record<string, unknown> {
  return { ...policy, object: 'policy' };
}

/**
 * The policy as a user writes it in a policy file: the fields of
 * schemas/policy.schema.json in canonical order, defaults filled in, nothing of
 * the resource (object, livemode, timestamps). Reading it back (a YAML PUT)
 * gives the same policy. Long strings stay on one line (no folding).
 */
export function policyYaml(policy: Policy): string {
  return stringify(canonicalPolicy(policy), { lineWidth: 0 });
}
