/** agent-authz/verifier: verifying permit tokens in downstream services. */
export { createPermitVerifier } from './create-verifier.js';
export { argsDigest, canonicalizeJson } from './args-digest.js';
export type { PermitClaims, PermitExpectations, PermitVerifier, PermitVerifierOptions } from './create-verifier.js';
export {
  PermitError,
  PermitExpiredError,
  PermitMismatchError,
  PermitSignatureInvalidError,
  PermitUnavailableError,
} from './errors.js';
