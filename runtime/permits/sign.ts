/**
 * Permit tokens: compact JWS (EdDSA / Ed25519, `typ: permit+jwt`) signed directly
 * with node:crypto (about 45 µs a token here, against about 140-200 µs through
 * jose's SignJWT); jose's jwtVerify accepts them (tested).
 */
import { sign } from 'node:crypto';
import { randomBase62 } from '../ids.js';
import type { DecisionRow } from '../store/decisions.js';
import type { PermitClaims } from '../../verifier/index.js';
import type { KeyRing } from './key-ring.js';

export type { PermitClaims };

const headerCache = new Map<string, string>();

function encodedHeader(kid: string): string {
  let h = headerCache.get(kid);
  if (!h) {
    h = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid, typ: 'permit+jwt' })).toString('base64url');
    headerCache.set(kid, h);
  }
  return h;
}

export function permitClaims(decision: DecisionRow, issuer: string): PermitClaims {
  const claims: PermitClaims = {
    iss: issuer,
    sub: decision.agent_id,
    act: decision.action,
    eff: decision.effect as 'allow' | 'review',
    dec: decision.id,
    acc: decision.account_id,
    env: decision.environment,
    iat: Math.floor(decision.evaluated_at.getTime() / 1000),
    // NumericDate in whole seconds, never later than the decision's expiry.
    exp: Math.floor(decision.expires_at.getTime() / 1000),
    jti: `pmt_${randomBase62(24)}`,
  };
  if (decision.resource !== null) claims.res = decision.resource;
  return claims;
}

export function signPermit(claims: PermitClaims, ring: KeyRing): string {
  const key = ring.signer();
  const signingInput = `${encodedHeader(key.kid)}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${signingInput}.${sign(null, Buffer.from(signingInput), key.privateKey).toString('base64url')}`;
}
