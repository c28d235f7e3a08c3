/** Prefixed opaque ids (`dec_`, `evt_`, ...): prefix + 24 random base62 characters. */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes drawn from the CSPRNG in blocks: one system call per ~150 ids, not one per id. */
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

function nextByte(): number {
  if (offset === POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  return pool[offset++]!;
}

/** `length` random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = nextByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

export type IdPrefix = 'dec' | 'pol' | 'evt' | 'acc' | 'we' | 'whd' | 'key' | 'req';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(24)}`;
}
