/** The decision path's permit issuer: allow and review decisions get a signed token. */
import type { PermitIssuer } from '../domain/decision-ports.js';
import type { DecisionRow } from '../store/decisions.js';
import type { KeyRing } from './key-ring.js';
import { permitClaims, signPermit } from './sign.js';

export function ringPermitIssuer(ring: KeyRing, issuer: string): PermitIssuer {
  return {
    issue: (decision: DecisionRow) =>
      decision.effect === 'deny' ? null : signPermit(permitClaims(decision, issuer), ring),
  };
}
