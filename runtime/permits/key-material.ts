/**
 * Ed25519 key material: generation, the JWK thumbprint used as `kid` (RFC 7638),
 * and the private key at rest — PKCS#8 PEM, sealed under the master key when one
 * is given (secrets/sealed-text.ts; `authz serve` always has one), and sealed
 * again when stored in the clear or in an older envelope.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import sodium from 'sodium-native';
import { needsReseal, openText, sealText } from '../secrets/sealed-text.js';

export { MasterKeyError } from '../secrets/sealed-text.js';

export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
}

export interface KeyMaterial {
  kid: string;
  jwk: PublicJwk;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** libsodium's form of the private key (seed || public key, 64 bytes) in guarded memory: what sign.ts signs with. */
  signingKey: Buffer;
}

export function thumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
}

export function generateKeyMaterial(): KeyMaterial {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return fromKeys(privateKey, publicKey);
}

function fromKeys(privateKey: KeyObject, publicKey: KeyObject): KeyMaterial {
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  const kid = thumbprint(x);
  const signingKey = sodium.sodium_malloc(sodium.crypto_sign_SECRETKEYBYTES);
  const seed = Buffer.from((privateKey.export({ format: 'jwk' }) as { d: string }).d, 'base64url');
  sodium.crypto_sign_seed_keypair(Buffer.alloc(sodium.crypto_sign_PUBLICKEYBYTES), signingKey, seed);
  seed.fill(0);
  return {
    kid,
    jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' },
    privateKey,
    publicKey,
    signingKey,
  };
}

/** The private key as stored: PEM, or sealed when a master secret is given. */
export function sealPrivateKey(key: KeyObject, secret: string | undefined): { text: string; encrypted: boolean } {
  return sealText(key.export({ format: 'pem', type: 'pkcs8' }) as string, secret);
}

/**
 * The stored private key sealed under the current envelope and master key, or
 * null when it already is (or there is no master key).
 *
 *   const again = resealPrivateKey(row.private_key, row.encrypted, masterKey); // null | { text, encrypted: true }
 */
export function resealPrivateKey(
  text: string,
  encrypted: boolean,
  secret: string | undefined,
): { text: string; encrypted: boolean } | null {
  if (!needsReseal(text, encrypted, secret)) return null;
  return sealText(openText(text, encrypted, secret, 'the signing keys'), secret);
}

export function openPrivateKey(text: string, encrypted: boolean, secret: string | undefined): KeyMaterial {
  const privateKey = createPrivateKey(openText(text, encrypted, secret, 'the signing keys'));
  return fromKeys(privateKey, createPublicKey(privateKey));
}
