/**
 * The permit check, once: what the claims of a correctly signed permit token must
 * say to be accepted, for both verifiers of the project. POST /v1/permits/verify
 * (runtime/permits/verify.ts: node:crypto, this service's key ring, the caller's
 * account and environment) and the verifier library (create-verifier.ts: jose,
 * the issuer's JWKS, the verifier's options) each check the token's frame with
 * permit-token.ts and the signature their own way, then call checkPermitClaims:
 * the claims' shapes, `iss`, the account and environment, `nbf` and `exp`, and
 * what the caller expects (action, resource, arguments), in that order.
 * Refusals are PermitErrors (errors.ts) with the service's codes.
 */
import { argsDigest } from './args-digest.js';
import { PermitExpiredError, PermitMismatchError } from './errors.js';
import { invalidPermit, quote } from './permit-token.js';

/** The claims of a permit token (docs/permits.md#the-token). Times are seconds since the epoch. */
export interface PermitClaims {
  /** The issuing service's base URL. */
  iss: string;
  /** agent_id. */
  sub: string;
  /** The action, e.g. `payments.refund`. */
  act: string;
  /** The resource, absent when the decision had none. */
  res?: string;
  /** `review`: allowed, but flagged for human review. */
  eff: 'allow' | 'review';
  /** Decision id (`dec_...`). */
  dec: string;
  /** Account id (`acc_...`). */
  acc: string;
  env: 'test' | 'live';
  iat: number;
  exp: number;
  jti: string;
  /** The decision's `session_id` (the agent run), when it had one. */
  sid?: string;
  /** The decision's `on_behalf_of` (the user), when it had one. */
  obo?: string;
  /** The decision's `args_digest`: the permit holds only for those exact arguments (see `argsDigest`). */
  args?: string;
}

/** What the caller requires of the token beyond a valid signature. Omitted fields are not checked. */
export interface PermitExpectations {
  /** Must equal `act`; else PermitMismatchError. */
  action?: string;
  /** Must equal `res` (a token without `res` does not match); else PermitMismatchError. */
  resource?: string;
  /** Must equal `acc`; else PermitSignatureInvalidError (a token of another account is not valid here). */
  account?: string;
  /** Must equal `env`; else PermitSignatureInvalidError (a test token is not valid in live, and back). */
  environment?: 'test' | 'live';
  /**
   * The arguments of the call the permit is used for: their `argsDigest` must
   * equal the claim `args` (a token without `args` does not match); else
   * PermitMismatchError. Needs `action` too (a TypeError without it): equal
   * arguments of another tool would otherwise pass, e.g. a permit for
   * `files.read { path }` in the handler of `files.delete { path }`.
   * `undefined` arguments are checked as `{}`, `null` as `null`.
   */
  arguments?: unknown;
}

/** What the verifier itself is set up to accept, whoever calls it. */
export interface PermitClaimRules {
  /** The one accepted `iss`: the service's base URL (no trailing slash). */
  issuer: string;
  /** The current time, ms since the epoch (the injectable clock's, or the verifier's `now`). */
  nowMs: number;
  /** Leeway on `exp` and `nbf`, in seconds. Default 0. */
  clockToleranceSeconds?: number;
  /** The account the verifier is bound to: a token of another is not valid here. Omitted: any account. */
  account?: string;
  /** The environment the verifier is bound to. Omitted: either. */
  environment?: 'test' | 'live';
}

/**
 * Refuses expectations that would check less than they seem to: `arguments`
 * without `action` (the same arguments of another tool would pass).
 *
 * @throws TypeError for `arguments` without a string `action`.
 *
 * @example
 * ```ts
 * assertExpectations({ action: 'files.read', arguments: { path: 'a' } }); // passes
 * assertExpectations({ arguments: { path: 'a' } }); // throws TypeError
 * ```
 */
export function assertExpectations(expect: PermitExpectations): void {
  if (Object.hasOwn(expect, 'arguments') && typeof expect.action !== 'string') {
    throw new TypeError(
      'verify: give the action with the arguments ({ action, arguments }): a permit for the same arguments of another tool would pass otherwise',
    );
  }
}

/** A NumericDate for a message: ISO 8601, or the number itself when no Date can hold it. */
function when(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? `${seconds} (seconds since the epoch)` : date.toISOString();
}

/** The claims' shapes: every required claim present and typed, the optional ones absent or typed; unknown claims dropped. */
function readClaims(payload: unknown): PermitClaims {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw invalidPermit('the claims are not a JSON object');
  const c = payload as Record<string, unknown>;
  const malformed = (claim: string, what: string) => invalidPermit(`claim "${claim}" is missing or not ${what}`);
  const str = (claim: string): string => {
    const v = c[claim];
    if (typeof v !== 'string' || v === '') throw malformed(claim, 'a non-empty string');
    return v;
  };
  const num = (claim: string): number => {
    const v = c[claim];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw malformed(claim, 'a number');
    return v;
  };
  const iss = str('iss');
  const sub = str('sub');
  const act = str('act');
  if (c.eff !== 'allow' && c.eff !== 'review') throw malformed('eff', '"allow" or "review"');
  const eff = c.eff;
  const dec = str('dec');
  const acc = str('acc');
  if (c.env !== 'test' && c.env !== 'live') throw malformed('env', '"test" or "live"');
  const env = c.env;
  const iat = num('iat');
  const exp = num('exp');
  const jti = str('jti');
  if (c.nbf !== undefined) num('nbf');
  const claims: PermitClaims = { iss, sub, act, eff, dec, acc, env, iat, exp, jti };
  for (const name of ['res', 'sid', 'obo', 'args'] as const) {
    const v = c[name];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v === '') throw invalidPermit(`claim "${name}" is not a non-empty string`);
    claims[name] = v;
  }
  return claims;
}

/**
 * The claims of a correctly signed permit token, once they pass every rule:
 *
 * 1. shapes: `iss sub act dec acc jti` non-empty strings, `eff` allow|review,
 *    `env` test|live, `iat exp` (and `nbf` when present) numbers, `res sid obo
 *    args` absent or non-empty strings; unknown claims are dropped;
 * 2. `iss` is `rules.issuer`, exactly;
 * 3. `acc` and `env` are those the verifier is bound to (`rules`), then those
 *    the caller expects (`expect`): a per-call expectation cannot widen the
 *    verifier's own;
 * 4. `nbf` (when present) has come and `exp` has not, both with the tolerance;
 * 5. `act`, `res` and the digest of `expect.arguments` are what the caller expects.
 *
 * Steps 1-4 fail with PermitSignatureInvalidError (`auth.signature_invalid`: not
 * a valid permit here), but a passed `exp` with PermitExpiredError
 * (`auth.expired`); step 5 with PermitMismatchError (`permit.mismatch`).
 *
 * @param payload - the token's payload, parsed (permitPayload), after its signature verified.
 * @param rules - the issuer, the time and the tenant the verifier is bound to.
 * @param expect - what the caller requires; omitted fields are not checked.
 * @throws TypeError for `expect.arguments` without `expect.action` (assertExpectations).
 *
 * @example
 * ```ts
 * const payload = { iss: 'http://127.0.0.1:8080', sub: 'bot', act: 'orders.read', eff: 'allow', dec: 'dec_1',
 *   acc: 'acc_1', env: 'test', iat: 1_800_000_000, exp: 1_800_000_300, jti: 'pmt_1' };
 * const rules = { issuer: 'http://127.0.0.1:8080', nowMs: 1_800_000_100_000, account: 'acc_1', environment: 'test' };
 * checkPermitClaims(payload, rules, { action: 'orders.read' }).sub; // => 'bot'
 * checkPermitClaims(payload, { ...rules, nowMs: 1_800_000_300_000 }); // throws PermitExpiredError
 * checkPermitClaims(payload, rules, { action: 'orders.delete' }); // throws PermitMismatchError
 * ```
 */
export function checkPermitClaims(
  payload: unknown,
  rules: PermitClaimRules,
  expect: PermitExpectations = {},
): PermitClaims {
  assertExpectations(expect);
  const claims = readClaims(payload);
  if (claims.iss !== rules.issuer) throw invalidPermit(`issued by another service (iss ${quote(claims.iss)})`);
  if (rules.account !== undefined && claims.acc !== rules.account)
    throw invalidPermit(`issued for another account than ${rules.account}`);
  if (rules.environment !== undefined && claims.env !== rules.environment)
    throw invalidPermit(`issued for the ${claims.env} environment, not ${rules.environment}`);
  if (expect.account !== undefined && claims.acc !== expect.account) throw invalidPermit('issued for another account');
  if (expect.environment !== undefined && claims.env !== expect.environment)
    throw invalidPermit(`issued for the ${claims.env} environment, not ${expect.environment}`);
  const toleranceMs = (rules.clockToleranceSeconds ?? 0) * 1000;
  const nbf = (payload as { nbf?: number }).nbf;
  if (nbf !== undefined && nbf * 1000 > rules.nowMs + toleranceMs)
    throw invalidPermit(`not valid before ${when(nbf)} (nbf)`);
  if (claims.exp * 1000 <= rules.nowMs - toleranceMs)
    throw new PermitExpiredError(`the permit token expired at ${when(claims.exp)}`);
  if (expect.action !== undefined && claims.act !== expect.action) {
    throw new PermitMismatchError(`the permit is for action ${quote(claims.act)}, not ${quote(expect.action)}`);
  }
  if (expect.resource !== undefined && claims.res !== expect.resource) {
    const has = claims.res === undefined ? 'no resource' : `resource ${quote(claims.res)}`;
    throw new PermitMismatchError(`the permit is for ${has}, not ${quote(expect.resource)}`);
  }
  if (Object.hasOwn(expect, 'arguments')) {
    if (claims.args === undefined)
      throw new PermitMismatchError(
        'the permit is not bound to arguments (no args claim), and these calls need one that is',
      );
    if (claims.args !== argsDigest(expect.arguments))
      throw new PermitMismatchError('the permit was issued for other arguments (args digest differs)');
  }
  return claims;
}
