/**
 * Secrets at rest (permit signing keys, webhook signing secrets, stored
 * idempotent answers): sealed with AES-256-GCM under a key derived from the
 * master key (AUTHZ_MASTER_KEY, or the generated key file: see master-key.ts),
 * or stored as they are when no master key is given (tests; `authz serve`
 * always has one). `encrypted` travels beside the text so a store can hold both.
 *
 * Envelopes:
 * - `aes-256-gcm:v2:<salt>:<iv>:<tag>:<body>` (written now): the AES key is
 *   scrypt(master key, salt; N=2^15, r=8, p=1), a 16-byte random salt per
 *   process, the envelope's first three fields bound as additional data. The
 *   derivation (about 0.1 s) runs once per (master key, salt) and is cached, so
 *   a process pays it once for its own seals and once per salt it opens.
 * - `aes-256-gcm:v1:<iv>:<tag>:<body>` (read only): the key was one SHA-256 of
 *   the master key. Still opened; re-sealed as v2 where the owner rewrites it
 *   (the signing keys: at start, see permits/key-ring.ts).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from 'node:crypto';

export class MasterKeyError extends Error {}

/** How a MasterKeyError names the key; `authz serve` puts the variable or the file it used in its place. */
export const MASTER_KEY = 'the master key';

const V1 = 'aes-256-gcm:v1';
const V2 = 'aes-256-gcm:v2';

/** scrypt cost of v2 envelopes: 32 MiB and about 0.1 s per derivation. */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const SALT_BYTES = 16;
const CACHE_LIMIT = 64;

function v1Key(secret: string): Buffer {
  return createHash('sha256').update(`agent-authz signing keys\0${secret}`).digest();
}

/** Derived v2 keys by (master key fingerprint, salt); at most CACHE_LIMIT, oldest dropped first. */
const derived = new Map<string, Buffer>();

function v2Key(secret: string, salt: Buffer): Buffer {
  const id = `${createHash('sha256').update(secret).digest('base64url')}:${salt.toString('base64url')}`;
  let key = derived.get(id);
  if (!key) {
    key = scryptSync(`agent-authz master key\0${secret}`, salt, 32, SCRYPT_PARAMS);
    if (derived.size >= CACHE_LIMIT) derived.delete(derived.keys().next().value!);
    derived.set(id, key);
  }
  return key;
}

/** This process's salt for new envelopes (one derivation per master key per process). */
let processSalt: Buffer | undefined;

/**
 * Derives this process's sealing key now (about 0.1 s of CPU), so that the
 * first request that seals something does not wait for it.
 *
 *   prepareSealing(config.masterKey); // at start
 */
export function prepareSealing(secret: string): void {
  processSalt ??= randomBytes(SALT_BYTES);
  v2Key(secret, processSalt);
}

/**
 * Seals `plain` under the master key `secret` (a v2 envelope); without a secret
 * the text is returned as it is, `encrypted: false`.
 *
 *   const { text, encrypted } = sealText(pem, config.masterKey); // 'aes-256-gcm:v2:...', true
 */
export function sealText(plain: string, secret: string | undefined): { text: string; encrypted: boolean } {
  if (!secret) return { text: plain, encrypted: false };
  processSalt ??= randomBytes(SALT_BYTES);
  const salt = processSalt.toString('base64url');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', v2Key(secret, processSalt), iv);
  cipher.setAAD(Buffer.from(`${V2}:${salt}`));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return {
    text: [
      V2,
      salt,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      body.toString('base64url'),
    ].join(':'),
    encrypted: true,
  };
}

/**
 * Whether a stored secret should be written again with sealText: it is stored
 * in the clear, or in an older envelope, while a master key is configured.
 *
 *   if (needsReseal(row.private_key, row.encrypted, masterKey)) rewrite(row);
 */
export function needsReseal(text: string, encrypted: boolean, secret: string | undefined): boolean {
  if (!secret) return false;
  return !encrypted || !text.startsWith(`${V2}:`);
}

/**
 * The plain text of a stored secret (v2 or v1 envelope, or stored in the clear).
 * `what` names the secret in errors ("the signing keys", "the webhook secrets").
 *
 *   const pem = openText(row.private_key, row.encrypted, config.masterKey, 'the signing keys');
 */
export function openText(text: string, encrypted: boolean, secret: string | undefined, what: string): string {
  if (!encrypted) return text;
  if (!secret)
    throw new MasterKeyError(`${what} are encrypted: set AUTHZ_MASTER_KEY to the secret they were stored with`);
  const parts = text.split(':');
  const version = `${parts[0]}:${parts[1]}`;
  let key: Buffer;
  let fields: string[];
  let aad: Buffer | undefined;
  if (version === V2 && parts.length === 6) {
    const salt = Buffer.from(parts[2]!, 'base64url');
    if (salt.length !== SALT_BYTES) throw new MasterKeyError(`${what}: unknown stored format`);
    key = v2Key(secret, salt);
    aad = Buffer.from(`${V2}:${parts[2]}`);
    fields = parts.slice(3);
  } else if (version === V1 && parts.length === 5) {
    key = v1Key(secret);
    fields = parts.slice(2);
  } else {
    throw new MasterKeyError(`${what}: unknown stored format`);
  }
  const [iv, auth, body] = fields;
  if (!iv || !auth || body === undefined) throw new MasterKeyError(`${what}: unknown stored format`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    if (aad) decipher.setAAD(aad);
    decipher.setAuthTag(Buffer.from(auth, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new MasterKeyError(`${MASTER_KEY} does not open ${what} (another key than they were sealed with?)`);
  }
}
