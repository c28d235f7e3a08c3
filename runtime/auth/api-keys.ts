/**
 * API keys: `svc_test_sk_` / `svc_live_sk_` + 40 random base62 characters. Only the
 * SHA-256 of a key is stored; lookups go by that hash, so comparing never touches
 * the secret itself (no timing leak), and the hash is compared in constant time.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '../ids.js';
import type { Environment } from '../tenant.js';

export const SCOPES = [
  'decisions:write',
  'decisions:read',
  'policies:read',
  'policies:write',
  'agents:read',
  'agents:write',
  'budgets:read',
  'events:read',
  'webhooks:manage',
  'permits:verify',
  // Extension (docs/reviews.md#the-rules).
  'reviews:read',
  'reviews:write',
  '*',
] as const;
export type Scope = (typeof SCOPES)[number];

const KEY_RE = /^svc_(test|live)_sk_[0-9A-Za-z]{32,128}$/;

export function generateApiKey(environment: Environment): string {
  return `svc_${environment}_sk_${randomBase62(40)}`;
}

/** The environment a well-formed key addresses, or null for a malformed one. */
export function parseApiKey(key: string): Environment | null {
  const m = KEY_RE.exec(key);
  return m ? (m[1] as Environment) : null;
}

/** The SHA-256 of a key, as stored (`api_keys.key_hash`). */
export function hashApiKey(key: string): Buffer {
  return Buffer.from(apiKeyDigest(key), 'base64');
}

/**
 * The SHA-256 of a key in base64 (what the key cache is keyed by): one-shot
 * `crypto.hash`, about a microsecond, without a Hash object or a Buffer per request.
 *
 * @example
 * hashApiKey(key).equals(Buffer.from(apiKeyDigest(key), 'base64')); // => true
 */
export function apiKeyDigest(key: string): string {
  return hash('sha256', key, 'base64');
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** What is shown of a key after creation: its prefix and first 4 characters. */
export function displayPrefix(key: string): string {
  return `${key.slice(0, 16)}...`;
}

export function hasScope(scopes: readonly string[], needed: Scope): boolean {
  return scopes.includes('*') || scopes.includes(needed);
}
