/**
 * Verifying a permit token (POST /v1/permits/verify): strict compact JWS parsing,
 * EdDSA only (so `alg: none` and an HS256 token keyed with the public key fail),
 * a published kid, the signature, then the claims. A token of another account or
 * environment is treated as not signed for this caller. Expiry is checked after
 * the signature, so a forged expired token is signature_invalid.
 */
import { verify } from 'node:crypto';
import type { Principal } from '../tenant.js';
import type { Clock } from '../clock.js';
import { SignatureInvalidError, TokenExpiredError } from '../errors/api-error.js';
import type { KeyRing } from './key-ring.js';
import type { PermitClaims } from './sign.js';

const B64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Whether the segment is the one canonical spelling of its bytes: a lenient
 * decoder ignores the unused low bits of the last character, so without this
 * check 16 different spellings of one signature would all verify.
 */
function canonicalB64url(part: string): boolean {
  return B64URL.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part;
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

function isClaims(v: unknown): v is PermitClaims {
  if (v === null || typeof v !== 'object') return false;
  const c = v as Record<string, unknown>;
  const strings = ['iss', 'sub', 'act', 'dec', 'acc', 'env', 'jti'].every((k) => typeof c[k] === 'string');
  return strings && (c.eff === 'allow' || c.eff === 'review') && typeof c.iat === 'number' && typeof c.exp === 'number' && (c.res === undefined || typeof c.res === 'string');
}

export async function verifyPermit(token: string, ring: KeyRing, clock: Clock, principal: Principal, issuer: string): Promise<PermitClaims> {
  const invalid = (why: string) => new SignatureInvalidError(`the permit token is not valid: ${why}`);
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every(canonicalB64url)) throw invalid('not a compact JWS');
  const [h, p, s] = parts as [string, string, string];
  const header = decodeJson(h) as { alg?: unknown; kid?: unknown; typ?: unknown } | undefined;
  if (!header || typeof header !== 'object') throw invalid('unreadable header');
  if (header.alg !== 'EdDSA') throw invalid(`algorithm ${JSON.stringify(header.alg)} is not accepted (EdDSA only)`);
  if (header.typ !== 'permit+jwt') throw invalid('not a permit token (typ)');
  if (typeof header.kid !== 'string') throw invalid('no key id');
  let key = ring.publicKey(header.kid);
  if (!key) {
    await ring.reloadIfStale(); // rotated by another process?
    key = ring.publicKey(header.kid);
  }
  if (!key) throw invalid('signed by an unknown or retired key');
  if (!verify(null, Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'))) throw invalid('signature does not verify');
  const claims = decodeJson(p);
  if (!isClaims(claims)) throw invalid('claims missing or malformed');
  if (claims.iss !== issuer) throw invalid('issued by another service');
  if (claims.acc !== principal.accountId || claims.env !== principal.environment) throw invalid('issued for another account or environment');
  if (claims.exp * 1000 <= clock.now()) throw new TokenExpiredError(`the permit token expired at ${new Date(claims.exp * 1000).toISOString()}`);
  return claims;
}
