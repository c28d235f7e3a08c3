/** The public forms of permits: a decision's fresh permit token, and a token's online verification. */
import type { PermitVerification } from '../domain/permits.js';

/**
 * POST /v1/decisions/:id/permit (`null`: the form an Idempotency-Key stores, since a permit is stored nowhere).
 *
 * @example
 * permitResource(null); // => { object: 'permit', permit_token: null }
 */
export function permitResource(token: string | null): Record<string, unknown> {
  return { object: 'permit', permit_token: token };
}

/**
 * POST /v1/permits/verify: `{ valid: true, claims }`, or `{ valid: false, reason, claims }` when the permit no longer stands.
 *
 * @example
 * permitVerificationResource({ valid: false, reason: 'agent.revoked', claims }); // => { object: 'permit_verification', valid: false, reason: 'agent.revoked', claims }
 */
export function permitVerificationResource(verification: PermitVerification): Record<string, unknown> {
  return { object: 'permit_verification', ...verification };
}
