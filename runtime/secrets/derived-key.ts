/**
 * Keys the service derives for one purpose each (HKDF-SHA256) from the master
 * key (AUTHZ_MASTER_KEY or the key file `authz serve` reads): every process of
 * one store holds the same master key, so a value MACed by one is checked by
 * another, and no key of its own is stored. Without a master key (the service
 * embedded by a program that gives none) the key is random for the process.
 */
import { hkdfSync, randomBytes } from 'node:crypto';

const processKeys = new Map<string, Buffer>();

/**
 * The 32-byte key for `purpose` under `masterKey`.
 *
 * @example
 * ```ts
 * import { derivedKey } from './derived-key.js';
 * const a = derivedKey('a master key of 16+ chars', 'authzen-search-page-token');
 * console.log(a.length, a.equals(derivedKey('a master key of 16+ chars', 'authzen-search-page-token'))); // => 32 true
 * console.log(a.equals(derivedKey('a master key of 16+ chars', 'another purpose'))); // => false
 * ```
 */
export function derivedKey(masterKey: string | undefined, purpose: string): Buffer {
  if (masterKey !== undefined) return Buffer.from(hkdfSync('sha256', masterKey, '', `agent-authz ${purpose}`, 32));
  let key = processKeys.get(purpose);
  if (!key) processKeys.set(purpose, (key = randomBytes(32)));
  return key;
}
