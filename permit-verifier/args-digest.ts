/**
 * The digest that binds a permit to a tool call's exact arguments: base64url
 * SHA-256 (43 characters) of the arguments' RFC 8785 (JCS) canonical JSON.
 * The MCP proxy sends it as a decision's `args_digest`; the permit carries it
 * as the claim `args`; a downstream service given the arguments checks it
 * (`verify(token, { action, arguments })`).
 */
import { createHash } from 'node:crypto';

/**
 * RFC 8785 canonical JSON: object members sorted by their names' UTF-16 code
 * units, no whitespace, numbers and strings as ECMAScript serialises them.
 * `undefined` members are left out (as JSON.stringify does).
 *
 * @throws TypeError for a value JSON cannot carry (a non-finite number, a BigInt, a function).
 *
 * @example
 * ```ts
 * import { canonicalizeJson } from 'agent-authz/verifier';
 *
 * console.log(canonicalizeJson({ b: [1, 'x'], a: { '10': true, '9': null } })); // => {"a":{"10":true,"9":null},"b":[1,"x"]}
 * ```
 */
export function canonicalizeJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonicalizeJson: numbers must be finite');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalizeJson(v))).join(',')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalizeJson(record[k])}`).join(',')}}`;
  }
  throw new TypeError(`canonicalizeJson: a ${typeof value} is not JSON`);
}

/**
 * The `args_digest` of a tool call's arguments. Absent arguments (`undefined`)
 * digest as `{}`; an explicit `null` digests as `null`, so a permit for a call
 * without arguments does not pass for one whose arguments are `null`, nor back.
 *
 * @example
 * ```ts
 * import { argsDigest } from 'agent-authz/verifier';
 *
 * console.log(argsDigest({ path: '/tmp/a.txt' }).length); // => 43
 * console.log(argsDigest(undefined) === argsDigest({})); // => true
 * console.log(argsDigest(null) === argsDigest({})); // => false
 * ```
 */
export function argsDigest(args?: unknown): string {
  return createHash('sha256')
    .update(canonicalizeJson(args === undefined ? {} : args), 'utf8')
    .digest('base64url');
}
