/**
 * Verifying a permit token (POST /v1/permits/verify) with this service's key
 * ring: the token's frame and header (permit-verifier/permit-token.ts), a published
 * kid, the signature (node:crypto, the one step done here), then the claims by
 * the rules the verifier library applies too (permit-verifier/permit-claims.ts), bound
 * to the caller's account and environment. A refusal is the library's
 * PermitError turned into the service's ApiError of the same code; the route
 * passes no expectations (its body is the token alone), so that code is
 * `auth.expired` or `auth.signature_invalid`.
 */
import { verify } from 'node:crypto';
import { PermitError, PermitExpiredError } from '../../permit-verifier/errors.js';
import { checkPermitClaims, type PermitClaims } from '../../permit-verifier/permit-claims.js';
import { invalidPermit, permitPayload, readPermitToken } from '../../permit-verifier/permit-token.js';
import type { Clock } from '../clock.js';
import { ApiError, SignatureInvalidError, TokenExpiredError } from '../errors/api-error.js';
import type { Principal } from '../tenant.js';
import type { KeyRing } from './key-ring.js';

/** The checks themselves, refusing with PermitErrors. */
async function check(
  token: string,
  ring: KeyRing,
  clock: Clock,
  principal: Principal,
  issuer: string,
): Promise<PermitClaims> {
  const parts = readPermitToken(token);
  let key = ring.publicKey(parts.kid);
  if (!key) {
    await ring.reloadIfStale(); // rotated by another process?
    key = ring.publicKey(parts.kid);
  }
  if (!key) throw invalidPermit('signed by an unknown or retired key');
  if (!verify(null, Buffer.from(parts.signingInput), key, Buffer.from(parts.signature, 'base64url')))
    throw invalidPermit('the signature does not verify');
  return checkPermitClaims(permitPayload(parts), {
    issuer,
    nowMs: clock.now(),
    account: principal.accountId,
    environment: principal.environment,
  });
}

/** A PermitError as the service's error of the same code. */
function asApiError(error: PermitError): ApiError {
  return error instanceof PermitExpiredError
    ? new TokenExpiredError(error.message)
    : new SignatureInvalidError(error.message);
}

/**
 * The claims of `token` when it is a valid permit of this service for the
 * principal's account and environment; else 401 TokenExpiredError
 * (`auth.expired`, checked after the signature) or SignatureInvalidError
 * (`auth.signature_invalid`). A kid the ring does not know makes it reload once
 * (a rotation in another process).
 *
 * @example
 * const claims = await verifyPermit(token, ring, clock, principal, 'http://127.0.0.1:8080');
 * console.log(claims.sub, claims.dec); // e.g. support-bot-1 dec_...
 */
export async function verifyPermit(
  token: string,
  ring: KeyRing,
  clock: Clock,
  principal: Principal,
  issuer: string,
): Promise<PermitClaims> {
  try {
    return await check(token, ring, clock, principal, issuer);
  } catch (error) {
    throw error instanceof PermitError ? asApiError(error) : error;
  }
}
