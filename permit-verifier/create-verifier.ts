/**
 * Verifying permit tokens in a downstream service (docs/permits.md#verifying-downstream-the-verifier-library): the issuer's public keys come from its JWKS
 * (`{base}/.well-known/jwks.json`) through jose's remote key set, which
 *
 * - refetches the set once it is older than `cacheMaxAgeMs` (docs/permits.md#the-public-keys: refresh
 *   periodically rather than keep keys for long), and
 * - refetches early when a token names a kid it doesn't know (a rotation), but at
 *   most once per `cooldownMs`, so a stream of tokens with made-up kids cannot
 *   turn into a stream of requests to the issuer.
 *
 * The token's frame and header (permit-token.ts: `alg: EdDSA`, `typ: permit+jwt`,
 * a kid) are checked before any key is looked up, so `none`/`HS256` tokens never
 * reach the key set; jose checks the signature (compactVerify); the claims are
 * checked after it by permit-claims.ts, the rules POST /v1/permits/verify applies
 * too. So a forged expired token is `auth.signature_invalid`, not `auth.expired`.
 */
import { compactVerify, createRemoteJWKSet, errors, type CompactVerifyGetKey } from 'jose';
import { PermitError, PermitUnavailableError } from './errors.js';
import {
  assertExpectations,
  checkPermitClaims,
  type PermitClaimRules,
  type PermitClaims,
  type PermitExpectations,
} from './permit-claims.js';
import { invalidPermit as invalid, permitPayload, quote, readPermitToken } from './permit-token.js';

/** The options every verifier takes. */
export interface PermitVerifierCommonOptions {
  /** The issuer's JWKS, e.g. `http://127.0.0.1:8080/.well-known/jwks.json`. */
  jwksUrl: string | URL;
  /** Expected `iss`: the service's base URL, e.g. `http://127.0.0.1:8080` (no trailing slash). */
  issuer: string;
  /** Permit tokens carry no `aud` (docs/permits.md#audience): an action names the service it is for. */
  audience?: never;
  /** Leeway for `exp` and `nbf`, in seconds. Default 0. */
  clockToleranceSeconds?: number;
  /** Minimum time between two JWKS fetches caused by an unknown kid, in ms. Default 30 000. */
  cooldownMs?: number;
  /** Age after which the JWKS is fetched again before use, in ms. Default 300 000 (the JWKS's max-age). */
  cacheMaxAgeMs?: number;
  /**
   * Current time in ms (tests). Used for the `exp` and `nbf` checks only; the key set's own
   * cache timing (cooldown, max age) follows the real clock.
   */
  now?: () => number;
}

/**
 * A verifier of one account's permits in one environment: a token whose `acc`
 * or `env` differs is PermitSignatureInvalidError. The issuer's keys sign the
 * permits of every account, so these two are what keep another tenant's
 * permits (and test permits) out.
 */
export interface PermitVerifierTenantOptions extends PermitVerifierCommonOptions {
  /** The account whose permits this service accepts (`acc_...`). */
  account: string;
  /** The environment whose permits this service accepts. */
  environment: 'test' | 'live';
  anyAccount?: false;
}

/**
 * A multi-tenant verifier: permits of every account pass, and the caller checks
 * `claims.acc` (and `claims.env`, unless `environment` is given) itself.
 */
export interface PermitVerifierAnyAccountOptions extends PermitVerifierCommonOptions {
  anyAccount: true;
  account?: never;
  /** When given, permits of the other environment are refused. */
  environment?: 'test' | 'live';
}

/** The options of createPermitVerifier: one account and environment, or `anyAccount: true`. */
export type PermitVerifierOptions = PermitVerifierTenantOptions | PermitVerifierAnyAccountOptions;

export interface PermitVerifier {
  /**
   * Verifies `token` and returns its claims, or throws a PermitError:
   * PermitExpiredError (`auth.expired`), PermitSignatureInvalidError
   * (`auth.signature_invalid`), PermitMismatchError (`permit.mismatch`),
   * PermitUnavailableError (`service.unavailable`).
   *
   * @param token - the compact JWS, without `Bearer `.
   * @param expect - what the claims must say beyond a valid signature; omitted fields are not checked.
   *
   * @example
   * ```ts
   * const claims = await verifier.verify(token, { action: 'payments.refund', resource: 'order:100482', environment: 'live' });
   * console.log(claims.sub, claims.eff); // e.g. support-bot-1 allow
   * ```
   */
  verify(token: string, expect?: PermitExpectations): Promise<PermitClaims>;
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value >= 0))
    throw new TypeError(`createPermitVerifier: ${name} must be a non-negative number`);
  return value;
}

/**
 * The account and environment the verifier is pinned to, from its options:
 * both, or `anyAccount: true` (with an optional environment). Anything else is
 * a TypeError naming what is missing.
 */
function pinnedTenant(options: PermitVerifierOptions): { account?: string; environment?: 'test' | 'live' } {
  const o = options as { account?: unknown; environment?: unknown; anyAccount?: unknown };
  if (o.anyAccount !== undefined && typeof o.anyAccount !== 'boolean')
    throw new TypeError('createPermitVerifier: anyAccount must be true or false');
  if (o.environment !== undefined && o.environment !== 'test' && o.environment !== 'live') {
    throw new TypeError(`createPermitVerifier: environment must be "test" or "live", not ${quote(o.environment)}`);
  }
  const environment = o.environment as 'test' | 'live' | undefined;
  if (o.anyAccount === true) {
    if (o.account !== undefined)
      throw new TypeError('createPermitVerifier: give either account or anyAccount: true, not both');
    return environment === undefined ? {} : { environment };
  }
  const missing = [o.account === undefined ? 'account' : null, environment === undefined ? 'environment' : null].filter(
    (m) => m !== null,
  );
  if (missing.length > 0) {
    throw new TypeError(
      `createPermitVerifier: ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required: the permits this service accepts are those of one account ("acc_...") in one environment ("test" or "live"); a multi-tenant service passes anyAccount: true and checks claims.acc and claims.env itself`,
    );
  }
  if (typeof o.account !== 'string' || !/^acc_[A-Za-z0-9]+$/.test(o.account))
    throw new TypeError(`createPermitVerifier: account must be an account id ("acc_..."), not ${quote(o.account)}`);
  return { account: o.account, environment };
}

/** "fetch failed" says little: add its cause (ECONNREFUSED...). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? ((err.cause as { code?: unknown }).code ?? err.cause.message) : undefined;
  return cause === undefined || cause === '' ? err.message : `${err.message} (${String(cause)})`;
}

/** jose's errors out of compactVerify (the signature step) as PermitErrors. */
function mapError(err: unknown): unknown {
  if (err instanceof PermitError) return err;
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalid('the signature does not verify', err);
  if (err instanceof errors.JOSEAlgNotAllowed) return invalid('the algorithm is not accepted (EdDSA only)', err);
  if (err instanceof errors.JWSInvalid) return invalid(`malformed token (${err.message})`, err);
  // Any other JOSE error about the token itself (JOSENotSupported...).
  if (err instanceof errors.JOSEError) return invalid(err.message, err);
  return err; // not about the token (a bug, a bad option): surfaced as is
}

/**
 * A verifier of the service's permit tokens for a downstream service: checks the
 * EdDSA signature against the issuer's JWKS (fetched over HTTP, cached for
 * `cacheMaxAgeMs`, refetched early for an unknown kid at most once per
 * `cooldownMs`), `typ: permit+jwt`, then the claims as POST /v1/permits/verify
 * does (permit-claims.ts): their shapes, `iss`, the account and environment the
 * verifier is for, `nbf` and the expiry, and what the caller expects (action,
 * resource, arguments). No request is made until the first `verify`.
 *
 * @param options - `jwksUrl` (`{base}/.well-known/jwks.json`), `issuer` (the
 *   service's base URL), and `account` (`acc_...`) with `environment` (`test` or
 *   `live`) are required: the issuer's keys sign every account's permits, so a
 *   verifier without them would accept another tenant's. A multi-tenant service
 *   passes `anyAccount: true` instead of `account` (`environment` then optional)
 *   and checks `claims.acc` itself. `clockToleranceSeconds`, `cooldownMs`,
 *   `cacheMaxAgeMs` and `now` are optional.
 * @returns a PermitVerifier whose `verify(token, expect?)` resolves to the
 *   token's claims, or rejects with a PermitError subclass whose `code` and
 *   `status` a service can answer with directly: PermitExpiredError
 *   (`auth.expired`, 401), PermitSignatureInvalidError (`auth.signature_invalid`,
 *   401), PermitMismatchError (`permit.mismatch`, 403), PermitUnavailableError
 *   (`service.unavailable`, 503: the JWKS could not be fetched).
 * @throws TypeError at once for bad options (no issuer, a non-http(s) jwksUrl,
 *   no account or environment without `anyAccount: true`, a negative duration,
 *   an `audience`).
 *
 * @example
 * ```ts
 * import { createPermitVerifier, PermitError } from 'agent-authz/verifier';
 *
 * const verifier = createPermitVerifier({
 *   jwksUrl: 'http://127.0.0.1:8080/.well-known/jwks.json',
 *   issuer: 'http://127.0.0.1:8080',
 *   account: 'acc_VbsBnSR7nFMvyVACiGjlKCt0',
 *   environment: 'live',
 * });
 *
 * // In a route that refunds order 100482: admit the agent only with a permit for exactly that.
 * async function admit(authorization) {
 *   try {
 *     const claims = await verifier.verify(authorization?.replace(/^Bearer /, '') ?? '', {
 *       action: 'payments.refund',
 *       resource: 'order:100482',
 *     });
 *     return { status: 200, agent: claims.sub, decision: claims.dec };
 *   } catch (e) {
 *     if (e instanceof PermitError) return { status: e.status, code: e.code };
 *     throw e;
 *   }
 * }
 * console.log(JSON.stringify(await admit('Bearer not-a-permit'))); // => {"status":401,"code":"auth.signature_invalid"}
 *
 * // Without the account and environment: refused at once.
 * try {
 *   createPermitVerifier({ jwksUrl: 'http://127.0.0.1:8080/.well-known/jwks.json', issuer: 'http://127.0.0.1:8080' });
 * } catch (e) {
 *   console.log(e.message.split(':')[1].trim()); // => account and environment are required
 * }
 * ```
 */
export function createPermitVerifier(options: PermitVerifierOptions): PermitVerifier {
  if (typeof options.issuer !== 'string' || options.issuer === '')
    throw new TypeError('createPermitVerifier: issuer must be a non-empty string');
  if ((options as { audience?: unknown }).audience !== undefined)
    throw new TypeError('createPermitVerifier: permit tokens carry no audience');
  const jwksUrl = new URL(options.jwksUrl);
  if (jwksUrl.protocol !== 'https:' && jwksUrl.protocol !== 'http:')
    throw new TypeError('createPermitVerifier: jwksUrl must be an http(s) URL');
  const clockTolerance = nonNegative(options.clockToleranceSeconds, 0, 'clockToleranceSeconds');
  const cooldownDuration = nonNegative(options.cooldownMs, 30_000, 'cooldownMs');
  const cacheMaxAge = nonNegative(options.cacheMaxAgeMs, 300_000, 'cacheMaxAgeMs');
  const { issuer, now } = options;
  if (now !== undefined && typeof now !== 'function')
    throw new TypeError('createPermitVerifier: now must be a function');
  const tenant = pinnedTenant(options);

  const jwks = createRemoteJWKSet(jwksUrl, { cooldownDuration, cacheMaxAge });

  // Key lookup is the only step that talks to the network: its failures are told
  // apart here, from the token's own faults.
  const getKey: CompactVerifyGetKey = async (header, token) => {
    const { kid } = header; // a non-empty string: readPermitToken checked the header
    try {
      return await jwks(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey)
        throw invalid(`signed by a key the issuer does not publish (kid ${quote(kid)})`, err);
      if (err instanceof errors.JWKSMultipleMatchingKeys || err instanceof errors.JOSENotSupported)
        throw invalid(err.message, err);
      // JWKSTimeout, fetch's TypeError (refused, DNS...), non-200, not JSON, not a key set.
      const why = describe(err);
      throw new PermitUnavailableError(`the issuer's public keys could not be fetched from ${jwksUrl.href}: ${why}`, {
        cause: err,
      });
    }
  };

  return {
    async verify(token: string, expect: PermitExpectations = {}): Promise<PermitClaims> {
      assertExpectations(expect); // a misuse fails before the token is looked at
      const parts = readPermitToken(token);
      try {
        await compactVerify(token, getKey, { algorithms: ['EdDSA'] });
      } catch (err) {
        throw mapError(err);
      }
      const rules: PermitClaimRules = {
        issuer,
        nowMs: now ? now() : Date.now(),
        clockToleranceSeconds: clockTolerance,
        ...tenant,
      };
      const claims = checkPermitClaims(permitPayload(parts), rules, expect);
      return claims;
    },
  };
}
