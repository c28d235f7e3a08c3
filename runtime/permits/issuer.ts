/**
 * The decision path's permit issuer: allow and review decisions get a signed
 * token, signed on the event loop, or by the signing thread when one is given
 * (AUTHZ_SIGN_WORKER=1: sign-worker.ts; the token is then a promise).
 */
import type { PermitIssuer } from '../domain/decision-ports.js';
import type { DecisionRow } from '../store/decisions.js';
import type { KeyRing } from './key-ring.js';
import { permitClaims, permitSigningInput, signPermit } from './sign.js';
import type { SignWorker } from './sign-worker.js';

export function ringPermitIssuer(ring: KeyRing, issuer: string, worker?: SignWorker): PermitIssuer {
  if (!worker)
    return {
      issue: (decision: DecisionRow) =>
        decision.effect === 'deny' ? null : signPermit(permitClaims(decision, issuer), ring),
    };
  return {
    issue: (decision: DecisionRow) => {
      if (decision.effect === 'deny') return null;
      const key = ring.signer();
      return worker.sign(permitSigningInput(permitClaims(decision, issuer), key.kid), key);
    },
  };
}
