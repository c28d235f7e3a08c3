/**
 * Prefixed opaque ids (`dec_`, `evt_`, ...), one format for every prefix:
 * the prefix, `_`, 8 base62 characters of the time in milliseconds (so ids of
 * one prefix sort by the time they were made, in byte order), then 16 random
 * base62 characters (95 bits). 24 characters after the prefix in all.
 *
 * The store makes some ids in SQL (a budget event fired inside the limits
 * function, a webhook delivery made by the fan-out trigger): `authz_new_id` in
 * runtime/store/functions/authz_new_id.sql mirrors this function for every time
 * from 1970 on (the service clock's range; before 1970 newId writes the epoch's
 * time part and authz_new_id does not). test/runtime/store/ids.test.ts holds the
 * two to the same shape for every prefix, the same time part at the same clock
 * (the millisecond floored), and one order of ids made on either side, on
 * PostgreSQL and on the embedded store.
 *
 * @example
 * newId('dec', clock.now()); // e.g. 'dec_0Vc61Q613aQJNECs8Lrjz8HE' (made at 2026-11-26T16:09:07.381Z)
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TIME_CHARS = 8;
const RANDOM_CHARS = 16;
/** The last time 8 base62 characters hold (ms). */
const TIME_LIMIT_MS = 62 ** TIME_CHARS - 1;

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

/** The time part: `ms` in base62, 8 characters, zero-padded (62^8 ms is about 6,900 years). */
export function timeBase62(ms: number): string {
  let n = Math.max(0, Math.floor(ms));
  let out = '';
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export type IdPrefix = 'dec' | 'pol' | 'evt' | 'acc' | 'we' | 'whd' | 'key' | 'req';

/** A new id of that prefix, made at `atMs` (the service clock's time). */
export function newId(prefix: IdPrefix, atMs: number): string {
  return `${prefix}_${timeBase62(atMs)}${randomBase62(RANDOM_CHARS)}`;
}

/**
 * The id range of the ids of `prefix` made in [sinceMs, untilMs): every such id
 * sorts (byte order) at or above `lo` and below `hi` (the decision log's
 * partitions are these ranges, one per UTC day:
 * runtime/store/migrations/015_log_partitions.sql; `lo` is what
 * runtime/store/functions/authz_id_floor.sql computes).
 *
 * @example
 * idRange('dec', Date.parse('2026-11-21'), Date.parse('2026-11-22')); // { lo: 'dec_0VbYqoN6', hi: 'dec_0VbehKxU' }
 */
export function idRange(prefix: string, sinceMs: number, untilMs: number): { lo: string; hi: string } {
  // Times past what 8 characters hold (the year 8888) clamp to the last one instead of wrapping round to 1970.
  const clamp = (ms: number) => Math.min(ms, TIME_LIMIT_MS);
  return {
    lo: `${prefix}_${timeBase62(clamp(Math.floor(sinceMs)))}`,
    hi: `${prefix}_${timeBase62(clamp(Math.ceil(untilMs)))}`,
  };
}

/** When an id of this format was made (ms), or null for an id of another form. */
export function idTime(id: string): number | null {
  const m = /^[a-z]+_([0-9A-Za-z]{8})[0-9A-Za-z]{16}$/.exec(id);
  if (!m) return null;
  let n = 0;
  for (const c of m[1]!) n = n * 62 + ALPHABET.indexOf(c);
  return n;
}
