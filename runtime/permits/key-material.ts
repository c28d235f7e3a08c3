/**
 * Ed25519 key material: generation, the JWK thumbprint used as `kid` (RFC 7638),
 * and the private key at rest — PKCS#8 PEM, sealed with AES-256-GCM under a key
 * derived from AUTHZ_MASTER_KEY when one is set.
 */
import { createCipheriv, createDecipheriv, createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';

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
  return { kid, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' }, privateKey, publicKey };
}

export class MasterKeyError extends Error {}

function masterKey(secret: string): Buffer {
  return createHash('sha256').update(`agent-authz signing keys\0${secret}`).digest();
}

const ENVELOPE = 'aes-256-gcm:v1';

/** The private key as stored: PEM, or sealed when a master secret is given. */
export function sealPrivateKey(key: KeyObject, secret: string | undefined): { text: string; encrypted: boolean } {
  const pem = key.export({ format: 'pem', type: 'pkcs8' }) as string;
  if (!secret) return { text: pem, encrypted: false };
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey(secret), iv);
  const body = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()]);
  return { text: [ENVELOPE, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':'), encrypted: true };
}

export function openPrivateKey(text: string, encrypted: boolean, secret: string | undefined): KeyMaterial {
  let pem = text;
  if (encrypted) {
    if (!secret) throw new MasterKeyError('the signing keys are encrypted: set AUTHZ_MASTER_KEY to the secret they were stored with');
    const parts = text.split(':');
    const [iv, auth, body] = parts.slice(2);
    if (parts.length !== 5 || `${parts[0]}:${parts[1]}` !== ENVELOPE || !iv || !auth || !body) throw new MasterKeyError('a stored signing key has an unknown format');
    try {
      const decipher = createDecipheriv('aes-256-gcm', masterKey(secret), Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(auth, 'base64url'));
      pem = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new MasterKeyError('AUTHZ_MASTER_KEY does not open the stored signing keys (wrong secret?)');
    }
  }
  const privateKey = createPrivateKey(pem);
  return fromKeys(privateKey, createPublicKey(privateKey));
}
