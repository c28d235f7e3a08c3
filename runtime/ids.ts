/** Prefixed opaque ids (`dec_`, `evt_`, ...): prefix + 24 random base62 characters. */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length * 2);
    for (let i = 0; i < bytes.length && out.length < length; i++) {
      const b = bytes[i]!;
      if (b < 248) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export type IdPrefix = 'dec' | 'pol' | 'evt' | 'acc' | 'we' | 'whd' | 'key' | 'req';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(24)}`;
}
