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

/**
 * The issuer of the ring's current signer, for the decisions of `issuer` (the
 * tokens' `iss`); with `worker`, the signature is the thread's (a promise).
 *
 * @example
 * const token = await ringPermitIssuer(ring, 'http://127.0.0.1:8080', sharedSignWorker()).issue(row);
 */
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
