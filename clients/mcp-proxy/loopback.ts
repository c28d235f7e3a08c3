/**
 * Loopback hosts, for the listener (no non-loopback `--listen` without
 * `auth:`; Host and Origin checks) and for the upstream's token requests
 * (client credentials go only over https or to loopback).
 */

/** The names of the loopback host as Host and Origin headers and URLs spell them. */
export const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * Whether a host (a listen address, or a URL's hostname) is a loopback one.
 *
 * @example
 * ```ts
 * console.log(isLoopback('127.0.0.1'), isLoopback('::1'), isLoopback(new URL('http://[::1]:8/').hostname), isLoopback('0.0.0.0')); // => true true true false
 * ```
 */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}
