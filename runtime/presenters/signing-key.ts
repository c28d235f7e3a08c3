/** The public form of a permit signing key (POST /admin/signing-keys/rotate). */
import type { PublicJwk } from '../permits/key-material.js';

/**
 * The new signing key and the key set verifiers now fetch.
 *
 * @example
 * signingKeyResource(jwk, ring.jwks()); // => { object: 'signing_key', kid: jwk.kid, public_jwk: jwk, jwks: { keys: [...] } }
 */
export function signingKeyResource(jwk: PublicJwk, jwks: { keys: PublicJwk[] }): Record<string, unknown> {
  return { object: 'signing_key', kid: jwk.kid, public_jwk: jwk, jwks };
}
