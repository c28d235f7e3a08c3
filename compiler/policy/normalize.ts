/** Defaults and derived fields: turns a schema-valid policy value into a `Policy`. */
import { DEFAULT_PRIORITY, type Policy } from './types.js';

/** `pol_` + the name with every character outside [A-Za-z0-9_] replaced by `_`. */
export function idFromName(name: string): string {
  return `pol_${name.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 68);
}

/**
 * `value` must already have passed schema validation. A missing id is derived from
 * the name (files) or taken from `generateId` (API); a missing name is the id.
 */
export function normalizePolicy(value: Record<string, unknown>, generateId?: () => string): Policy {
  const v = value as Partial<Policy>;
  const id = v.id ?? (v.name !== undefined ? idFromName(v.name) : generateId!());
  const policy: Policy = {
    id,
    name: v.name ?? id,
    state: v.state ?? 'enabled',
    priority: v.priority ?? DEFAULT_PRIORITY,
    effect: v.effect!,
    actions: [...v.actions!],
  };
  if (v.description !== undefined) policy.description = v.description;
  if (v.agents !== undefined) policy.agents = [...v.agents];
  if (v.resources !== undefined) policy.resources = [...v.resources];
  if (v.condition !== undefined) policy.condition = v.condition;
  if (v.rate_limit !== undefined) policy.rate_limit = { ...v.rate_limit };
  if (v.budget !== undefined) policy.budget = { ...v.budget };
  if (v.approval !== undefined) policy.approval = { ...v.approval };
  // A set: sorted, each once.
  if (v.labels !== undefined) policy.labels = [...new Set(v.labels)].sort();
  return policy;
}

/**
 * The policy with its fields in the canonical order used in bundles and API
 * responses (id, name, description, state, priority, effect, agents, actions,
 * resources, condition, rate_limit, budget, approval, labels), absent fields left out, lists copied
 * (labels sorted).
 * Expects a normalised policy (as {@link readPolicyValue} returns).
 *
 * @param p - a normalised policy.
 * @returns a new object; `p` is not changed.
 *
 * @example
 * ```ts
 * import { canonicalPolicy } from 'agent-authz/compiler';
 *
 * const p = { actions: ['orders.read'], effect: 'allow', priority: 100, state: 'enabled', name: 'r', id: 'pol_r' };
 * console.log(Object.keys(canonicalPolicy(p)).join()); // => id,name,state,priority,effect,actions
 * ```
 */
export function canonicalPolicy(p: Policy): Policy {
  return normalizePolicy(p as unknown as Record<string, unknown>);
}
