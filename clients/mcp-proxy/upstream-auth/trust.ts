/**
 * What the proxy's upstream token discovery trusts (docs/mcp.md#what-discovery-trusts):
 *
 * - protected resource metadata (RFC 9728) only when its `resource` is the
 *   upstream's resource identifier (section 3.3: identical, else the data is
 *   not used);
 * - an authorization server only when the configuration allows it
 *   (`upstream_auth.issuer`, one URL or a list): discovery picks among those,
 *   it never adds one;
 * - the client's credentials (a secret or a signed assertion) go only over
 *   https, or to a loopback address.
 */
import { isLoopback } from '../loopback.js';

/**
 * Whether the client's credentials may be sent to this URL: https, or http to
 * a loopback address (127.0.0.0/8, `[::1]`, `localhost`).
 *
 * @example
 * ```ts
 * console.log(credentialsMayGoTo(new URL('https://login.example.com/token')), credentialsMayGoTo(new URL('http://127.0.0.1:9000/token')), credentialsMayGoTo(new URL('http://login.example.com/token'))); // => true true false
 * ```
 */
export function credentialsMayGoTo(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname));
}

/**
 * An issuer identifier as compared: the URL's normal form without trailing slashes.
 *
 * @example
 * ```ts
 * console.log(issuerKey('HTTPS://Login.Example.com/'), issuerKey('https://login.example.com/tenant/')); // => https://login.example.com https://login.example.com/tenant
 * ```
 */
export function issuerKey(issuer: string): string {
  return (URL.canParse(issuer) ? new URL(issuer).href : issuer).replace(/\/+$/, '');
}

/**
 * Of the authorization servers an upstream names, the first the configuration
 * allows (in the configuration's spelling); undefined when it allows none of them.
 *
 * @example
 * ```ts
 * console.log(allowedServer(['https://evil.example', 'https://login.example.com/'], ['https://login.example.com'])); // => https://login.example.com
 * console.log(allowedServer(['https://evil.example'], ['https://login.example.com'])); // => undefined
 * ```
 */
export function allowedServer(named: readonly unknown[], allowed: readonly string[]): string | undefined {
  for (const server of named) {
    if (typeof server !== 'string') continue;
    const found = allowed.find((a) => issuerKey(a) === issuerKey(server));
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Whether a metadata document's `resource` is the resource identifier (RFC
 * 9728 section 3.3: identical, compared as URLs in their normal form).
 *
 * @example
 * ```ts
 * console.log(sameResource('https://MCP.example.com/mcp', 'https://mcp.example.com/mcp'), sameResource('https://mcp.example.com/', 'https://mcp.example.com/mcp')); // => true false
 * ```
 */
export function sameResource(named: string, resource: string): boolean {
  return URL.canParse(named) && URL.canParse(resource) && new URL(named).href === new URL(resource).href;
}
