/**
 * Secrets at rest (permit signing keys, webhook signing secrets): stored as
 * they are, or sealed with AES-256-GCM under a key derived from AUTHZ_MASTER_KEY
 * when one is set. `encrypted` travels beside the text so a store can hold both.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export class MasterKeyError extends Error {}

function masterKey(secret: string): Buffer {
  return createHash('sha256').update(`agent-authz signing keys\0${secret}`).digest();
}

const ENVELOPE = 'aes-256-gcm:v1';

export function sealText(plain: string, secret: string | undefined): { text: string; encrypted: boolean } {
  if (!secret) return { text: plain, encrypted: false };
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey(secret), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return { text: [ENVELOPE, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':'), encrypted: true };
}

/** `what` names the secret in errors ("the signing keys", "a webhook secret"). */
export function openText(text: string, encrypted: boolean, secret: string | undefined, what: string): string {
  if (!encrypted) return text;
  if (!secret) throw new MasterKeyError(`${what} are encrypted: set AUTHZ_MASTER_KEY to the secret they were stored with`);
  const parts = text.split(':');
  const [iv, auth, body] = parts.slice(2);
  if (parts.length !== 5 || `${parts[0]}:${parts[1]}` !== ENVELOPE || !iv || !auth || !body) throw new MasterKeyError(`${what}: unknown stored format`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', masterKey(secret), Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(auth, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new MasterKeyError(`AUTHZ_MASTER_KEY does not open ${what} (wrong secret?)`);
  }
}
