/**
 * The base class of the permit verifier's errors: every error `verify` throws
 * about a token is one; anything else out of `verify` is not about the token.
 * Each class carries its code (static `code`, the service's error codes of docs/errors.md
 * where one exists) and the HTTP status a downstream service should answer with
 * (static `status`); instances expose both through getters, so `err.code` works
 * without knowing the class.
 *
 * @example
 * ```ts
 * import { PermitError, PermitMismatchError } from 'agent-authz/verifier';
 *
 * const e = new PermitMismatchError('the permit is for action "orders.read", not "payments.refund"');
 * console.log(e instanceof PermitError, e.name, e.code, e.status); // => true PermitMismatchError permit.mismatch 403
 * console.log(PermitError.code, PermitError.status); // => permit.error 401
 * ```
 */
export class PermitError extends Error {
  static readonly code: string = 'permit.error';
  static readonly status: number = 401;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  get code(): string {
    return (this.constructor as typeof PermitError).code;
  }

  get status(): number {
    return (this.constructor as typeof PermitError).status;
  }
}

/** The token is past its `exp` (docs/permits.md#the-token). Only raised for a correctly signed token. */
export class PermitExpiredError extends PermitError {
  static override readonly code = 'auth.expired';
  static override readonly status = 401;
}

/**
 * The token is not a valid permit of this issuer: malformed, tampered, signed by
 * a key not in the JWKS, an algorithm other than EdDSA (`none`, `HS256`...), wrong
 * `typ` or `iss`, missing or mistyped claims, or of another account/environment
 * than expected (docs/permits.md#the-token).
 */
export class PermitSignatureInvalidError extends PermitError {
  static override readonly code = 'auth.signature_invalid';
  static override readonly status = 401;
}

/** A valid permit, but for another action or resource than the one requested. */
export class PermitMismatchError extends PermitError {
  static override readonly code = 'permit.mismatch';
  static override readonly status = 403;
}

/** The JWKS could not be fetched (network error, timeout, non-200, unusable body). */
export class PermitUnavailableError extends PermitError {
  static override readonly code = 'service.unavailable';
  static override readonly status = 503;
}
