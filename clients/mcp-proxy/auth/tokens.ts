/**
 * Checks the bearer tokens of the proxy's HTTP requests (docs/mcp.md#one-gateway-for-many-agents): a JWT signed by a key of the issuer's
 * key set, with `iss` the issuer, `aud` the proxy's resource URL (RFC 8707),
 * `exp`/`nbf` within 60 s of leeway, `iat` not in the future (beyond the
 * leeway), a lifetime (`exp - iat`; `exp` - now without `iat`) of at most
 * `max_token_lifetime_seconds` (default 24 h), and the agent claim; then the
 * required scopes. The answer is the identity the token carries (the agent and the
 * user it acts for) or a TokenRefusal saying how to answer.
 */
import { errors, jwtVerify, type JWTPayload } from 'jose';
import type { Identity } from '../http-listen.js';
import type { AuthConfig } from './config.js';
import { IssuerKeys, KeysUnavailableError } from './keys.js';

/** Seconds of leeway on `exp` and `nbf`. */
export const CLOCK_LEEWAY_SECONDS = 60;
/** Asymmetric signatures only: a key set never shares a secret with the proxy. */
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
/** Longest agent_id / on_behalf_of the service takes. */
const MAX_ID = 256;

/**
 * Why a request's token was not accepted: `invalid_token` (401), a missing
 * scope (403 `insufficient_scope`), or the issuer's keys out of reach
 * (`unavailable`, 503: the token may be fine).
 */
export class TokenRefusal extends Error {
  constructor(
    readonly kind: 'invalid_token' | 'insufficient_scope' | 'unavailable',
    message: string,
  ) {
    super(message);
    this.name = 'TokenRefusal';
  }
}

/** A token that passed every check. */
export interface CheckedToken {
  identity: Identity;
  /** The verified claims. */
  claims: JWTPayload;
}

export interface TokenCheckerOptions {
  config: AuthConfig;
  /** The `aud` every token must carry (the configured audience, else the public URL). */
  audience: () => string;
  /** Milliseconds since the epoch (default Date.now): the token times and the key cache's. */
  now?: () => number;
  /** Least time between two key-set reads caused by an unknown kid (default 30 s). */
  cooldownMs?: number;
}

/** The scopes a token grants: `scope` (space-separated, RFC 8693/9068) or `scp` (a list). */
export function grantedScopes(claims: JWTPayload): Set<string> {
  if (typeof claims.scope === 'string') return new Set(claims.scope.split(' ').filter((s) => s !== ''));
  if (Array.isArray(claims.scp)) return new Set(claims.scp.filter((s): s is string => typeof s === 'string'));
  if (typeof claims.scp === 'string') return new Set(claims.scp.split(' ').filter((s) => s !== ''));
  return new Set();
}

/**
 * `iat` and the lifetime, which jose leaves alone: a token issued in the
 * future (beyond the leeway) is refused, and so is one that lives longer than
 * `maxLifetime` seconds (`exp - iat`, or what is left of it without `iat`),
 * so a token leaked once cannot be used for days.
 *
 * @throws TokenRefusal (`invalid_token`) saying which.
 */
function checkTimes(claims: JWTPayload, nowSeconds: number, maxLifetime: number): void {
  const { iat, exp } = claims;
  if (iat !== undefined && (typeof iat !== 'number' || !Number.isFinite(iat)))
    throw new TokenRefusal('invalid_token', 'the token\'s "iat" claim is not a number');
  if (iat !== undefined && iat > nowSeconds + CLOCK_LEEWAY_SECONDS)
    throw new TokenRefusal('invalid_token', 'the token was issued in the future (its "iat" is later than now)');
  const lifetime = (exp as number) - (iat ?? nowSeconds);
  if (lifetime > maxLifetime) {
    throw new TokenRefusal(
      'invalid_token',
      `the token lives longer than this gateway accepts: ${Math.round(lifetime)} s from "iat" to "exp", at most ${maxLifetime} s (auth.max_token_lifetime_seconds)`,
    );
  }
}

const idValue = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= MAX_ID;

/** jose's refusal in words a client can act on. */
function refusalOf(error: unknown, config: AuthConfig, audience: string): TokenRefusal {
  if (error instanceof KeysUnavailableError)
    return new TokenRefusal('unavailable', `the issuer's keys cannot be read: ${error.message}`);
  if (error instanceof errors.JWTExpired) return new TokenRefusal('invalid_token', 'the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return new TokenRefusal('invalid_token', `the token was not issued by ${config.issuer}`);
    if (error.claim === 'aud')
      return new TokenRefusal(
        'invalid_token',
        `the token is not for this resource: its audience must include ${audience}`,
      );
    if (error.claim === 'nbf') return new TokenRefusal('invalid_token', 'the token is not valid yet');
    return new TokenRefusal('invalid_token', `the token's "${error.claim}" claim is invalid: ${error.reason}`);
  }
  if (error instanceof errors.JWKSNoMatchingKey)
    return new TokenRefusal('invalid_token', 'the token was not signed by a key of the issuer');
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new TokenRefusal('invalid_token', "the token's signature is not valid");
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new TokenRefusal(
      'invalid_token',
      "the token's signing algorithm is not accepted (an asymmetric one is required)",
    );
  if (error instanceof errors.JOSEError)
    return new TokenRefusal('invalid_token', `the token is not a valid JWT (${error.code})`);
  return new TokenRefusal('invalid_token', `the token cannot be checked: ${(error as Error).message}`);
}

/**
 * Checks tokens against one issuer.
 *
 * @example
 * ```ts
 * const checker = new TokenChecker({ config: auth, audience: () => 'https://tools.example.com/mcp' });
 * const { identity } = await checker.check(bearerToken); // or throws TokenRefusal
 * console.log(identity.agentId, identity.onBehalfOf);
 * ```
 */
export class TokenChecker {
  readonly keys: IssuerKeys;
  readonly #options: TokenCheckerOptions;
  readonly #now: () => number;

  constructor(options: TokenCheckerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const { config } = options;
    this.keys = new IssuerKeys({
      issuer: config.issuer,
      ...(config.jwks_uri === undefined ? {} : { jwksUri: config.jwks_uri }),
      cacheSeconds: config.jwks_cache_seconds,
      now: this.#now,
      ...(options.cooldownMs === undefined ? {} : { cooldownMs: options.cooldownMs }),
    });
  }

  /**
   * The identity of a valid token.
   *
   * @throws TokenRefusal saying what is wrong with it.
   */
  async check(token: string): Promise<CheckedToken> {
    const { config } = this.#options;
    const audience = this.#options.audience();
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, this.keys.getKey, {
        issuer: config.issuer,
        audience,
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        currentDate: new Date(this.#now()),
        algorithms: ALGORITHMS,
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw refusalOf(error, config, audience);
    }
    checkTimes(claims, this.#now() / 1000, config.max_token_lifetime_seconds);
    const agentClaims = config.agent_claim === undefined ? ['client_id', 'azp'] : [config.agent_claim];
    const agentClaim = agentClaims.find((c) => claims[c] !== undefined);
    const agentId = agentClaim === undefined ? undefined : claims[agentClaim];
    if (!idValue(agentId)) {
      throw new TokenRefusal(
        'invalid_token',
        agentClaim === undefined
          ? `the token has no agent claim (${agentClaims.join(' or ')})`
          : `the token's agent claim "${agentClaim}" is not a string of 1..${MAX_ID} characters`,
      );
    }
    const user = claims[config.user_claim];
    if (user !== undefined && !idValue(user))
      throw new TokenRefusal(
        'invalid_token',
        `the token's user claim "${config.user_claim}" is not a string of 1..${MAX_ID} characters`,
      );
    const granted = grantedScopes(claims);
    const missing = config.scopes.filter((s) => !granted.has(s));
    if (missing.length > 0)
      throw new TokenRefusal(
        'insufficient_scope',
        `the token lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(' ')}`,
      );
    return { identity: { agentId, ...(user === undefined ? {} : { onBehalfOf: user }) }, claims };
  }
}
