/**
 * The decision path signs with libsodium; Ed25519 is deterministic (RFC 8032), so
 * its tokens must be byte-identical to OpenSSL's for the same key and input, and
 * verify with node:crypto.
 */
import { sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateKeyMaterial } from '../../../runtime/permits/key-material.js';
import type { KeyRing } from '../../../runtime/permits/key-ring.js';
import { permitSigningInput, signPermit, type PermitClaims } from '../../../runtime/permits/sign.js';

describe('signPermit (libsodium)', () => {
  it('gives the same signature as OpenSSL for every key and claims, and it verifies', () => {
    for (let k = 0; k < 5; k++) {
      const material = generateKeyMaterial();
      const ring = { signer: () => material } as unknown as KeyRing;
      for (let i = 0; i < 20; i++) {
        const claims: PermitClaims = {
          iss: 'http://127.0.0.1:8080',
          sub: `agent-${k}-${i}`,
          act: 'orders.read',
          eff: 'allow',
          dec: `dec_${i}`,
          acc: 'acc_1',
          env: 'test',
          iat: 1_700_000_000 + i,
          exp: 1_700_000_300 + i,
          jti: `pmt_${k}_${i}`,
          ...(i % 2 ? { res: `order:${i}` } : {}),
        };
        const token = signPermit(claims, ring);
        const input = permitSigningInput(claims, material.kid);
        const [h, p, s] = token.split('.');
        expect(`${h}.${p}`).toBe(input);
        expect(s).toBe(sign(null, Buffer.from(input), material.privateKey).toString('base64url'));
        expect(verify(null, Buffer.from(input), material.publicKey, Buffer.from(s!, 'base64url'))).toBe(true);
      }
    }
  });
});
