/**
 * agent-authz/verifier: verifying permit tokens in downstream services, offline
 * (the signature against the JWKS, the claims by the rules POST /v1/permits/verify
 * applies too: permit-token.ts, permit-claims.ts). It cannot see what happened after a
 * token was issued (a revoked agent, a rejected decision, a deleted policy): a
 * permit it accepts is bounded by its `exp` only. `POST /v1/permits/verify`
 * sees those (docs/permits.md).
 */
export { createPermitVerifier } from './create-verifier.js';
export { argsDigest, canonicalizeJson } from './args-digest.js';
export type { PermitClaims, PermitExpectations } from './permit-claims.js';
export type {
  PermitVerifier,
  PermitVerifierAnyAccountOptions,
  PermitVerifierCommonOptions,
  PermitVerifierOptions,
  PermitVerifierTenantOptions,
} from './create-verifier.js';
export {
  PermitError,
  PermitExpiredError,
  PermitMismatchError,
  PermitSignatureInvalidError,
  PermitUnavailableError,
} from './errors.js';
