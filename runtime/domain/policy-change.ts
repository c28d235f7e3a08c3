/**
 * What a policy write did to a policy (a domain rule: the policy service and
 * the bundle service decide from it which `policy.*` event to fire; the
 * presenters only name it in the event body).
 */
import { canonicalJson, type Policy } from '../../compiler/index.js';

export type PolicyChange = 'created' | 'updated' | 'enabled' | 'disabled' | 'shadowed' | 'deleted';

/**
 * The change from `before` to `after` (absent: no policy); null when nothing
 * changed (key order aside: compared as canonical JSON).
 *
 * @example
 * changeKind(undefined, policy); // => 'created'
 * changeKind(policy, { ...policy, state: 'shadow' }); // => 'shadowed'
 */
export function changeKind(before: Policy | undefined, after: Policy | undefined): PolicyChange | null {
  if (!before && after) return 'created';
  if (before && !after) return 'deleted';
  if (!before || !after) return null;
  // Key order is not meaningful (jsonb does not keep it): compare canonical JSON.
  if (canonicalJson(before) === canonicalJson(after)) return null;
  if (before.state !== after.state)
    return after.state === 'enabled' ? 'enabled' : after.state === 'shadow' ? 'shadowed' : 'disabled';
  return 'updated';
}
