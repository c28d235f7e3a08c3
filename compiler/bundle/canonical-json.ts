/** JSON with object keys sorted at every level: the same value always gives the same text. */
import { createHash } from 'node:crypto';

/**
 * JSON text with object keys sorted at every level (array order kept,
 * `undefined` members left out): equal values give equal text, whatever order
 * their keys were written in. What policy-set hashes and idempotency keys are
 * computed over.
 *
 * @param value - any JSON-serialisable value.
 * @returns the compact JSON text.
 * @throws TypeError for a value JSON.stringify cannot serialise (a BigInt); RangeError for a cyclic one.
 *
 * @example
 * ```ts
 * import { canonicalJson } from 'agent-authz/compiler';
 *
 * console.log(canonicalJson({ b: 1, a: { d: [2, 1], c: undefined } })); // => {"a":{"d":[2,1]},"b":1}
 * ```
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/**
 * The lower-case hex SHA-256 of `text` (as UTF-8).
 *
 * @param text - the text to hash.
 * @returns 64 hex digits.
 *
 * @example
 * ```ts
 * import { canonicalJson, sha256Hex } from 'agent-authz/compiler';
 *
 * console.log(sha256Hex('abc')); // => ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
 * console.log(sha256Hex(canonicalJson({ a: 1, b: 2 })) === sha256Hex(canonicalJson({ b: 2, a: 1 }))); // => true
 * ```
 */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
