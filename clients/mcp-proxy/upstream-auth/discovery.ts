/**
 * Finding an upstream's token endpoint as the MCP authorization specification
 * (2025-11-25) says, for `upstream_auth:` without `token_url`:
 *
 * 1. the protected resource's metadata (RFC 9728): the URL in the 401's
 *    `WWW-Authenticate: Bearer resource_metadata="..."`, else the upstream's
 *    well-known path (`/.well-known/oauth-protected-resource` + its path,
 *    then at the root);
 *    Its `resource` must be the upstream's resource identifier, else it is refused;
 * 2. its first `authorization_servers` entry that `upstream_auth.issuer`
 *    allows (none allowed: refused; trust.ts);
 * 3. that server's metadata: RFC 8414 (`/.well-known/oauth-authorization-server`,
 *    path-inserted), then OpenID discovery (`/.well-known/openid-configuration`,
 *    path-inserted, then appended); its `issuer` must be the server's;
 * 4. its `token_endpoint`, with the client authentication methods and signing
 *    algorithms it lists (client-auth.ts chooses among them).
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { allowedServer, issuerKey, sameResource } from './trust.js';

/** Where the proxy asks for tokens, and what the authorization server says it accepts there. */
export interface TokenEndpoint {
  url: string;
  /** The authorization server's issuer identifier, when known: a client assertion's `aud`. */
  issuer?: string;
  /** `token_endpoint_auth_methods_supported`, when the metadata lists them. */
  authMethods?: string[];
  /** `token_endpoint_auth_signing_alg_values_supported`, when the metadata lists them. */
  signingAlgs?: string[];
}

/** The upstream's token endpoint cannot be found (the message says at which step). */
export class DiscoveryError extends Error {
  readonly code = 'mcp_proxy.upstream_auth_failed';
  constructor(message: string) {
    super(message);
    this.name = 'DiscoveryError';
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The `resource_metadata` parameter of a `WWW-Authenticate: Bearer ...` header.
 *
 * @example
 * ```ts
 * console.log(resourceMetadataOf('Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"')); // => https://mcp.example.com/.well-known/oauth-protected-resource/mcp
 * ```
 */
export function resourceMetadataOf(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/i.exec(
    header.replace(/^\s*Bearer\s+/i, ' '),
  );
  const value = match ? (match[1]?.replace(/\\(.)/g, '$1') ?? match[2]) : undefined;
  return value !== undefined && URL.canParse(value) ? value : undefined;
}

/** `origin` + `/.well-known/<name>` + the URL's path (RFC 8414 / RFC 9728 path insertion; none for `/`). */
function wellKnown(url: URL, name: string): string {
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}/.well-known/${name}${path}`;
}

/** The JSON object at the first of `urls` that answers 200 with one; undefined when none does. */
async function firstJson(
  fetchFn: FetchLike,
  urls: string[],
): Promise<{ url: string; body: Record<string, unknown> } | undefined> {
  for (const url of [...new Set(urls)]) {
    let response: Response;
    try {
      response = await fetchFn(url, { headers: { accept: 'application/json' } });
    } catch {
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      continue;
    }
    const body: unknown = await response.json().catch(() => undefined);
    if (isRecord(body)) return { url, body };
  }
  return undefined;
}

/** What discovery may trust (trust.ts): the resource the metadata must name and the authorization servers it may lead to. */
export interface DiscoveryTrust {
  /** The upstream's resource identifier (RFC 9728 section 3.3: the metadata's `resource` must be identical). */
  resource: string;
  /** The allowed authorization servers' issuer identifiers (`upstream_auth.issuer`). */
  issuers: readonly string[];
}

/**
 * The token endpoint of an upstream that answered 401, found through
 * metadata it is allowed to come from: the protected resource metadata must
 * name the upstream's resource, and one of its authorization servers must be
 * allowed; that server's metadata must name it as issuer.
 *
 * @param upstream - the upstream MCP endpoint.
 * @param wwwAuthenticate - the 401's `WWW-Authenticate` header, if any.
 * @throws DiscoveryError naming the step that failed or the mismatch refused.
 *
 * @example
 * ```ts
 * const endpoint = await discoverTokenEndpoint(new URL('https://docs.example.com/mcp'), response.headers.get('www-authenticate'), fetch, { resource: 'https://docs.example.com/mcp', issuers: ['https://login.example.com'] });
 * console.log(endpoint.url, endpoint.issuer); // => https://login.example.com/token https://login.example.com
 * ```
 */
export async function discoverTokenEndpoint(
  upstream: URL,
  wwwAuthenticate: string | null,
  fetchFn: FetchLike,
  trust: DiscoveryTrust,
): Promise<TokenEndpoint> {
  const declared = resourceMetadataOf(wwwAuthenticate);
  const prmUrls = declared
    ? [declared]
    : [wellKnown(upstream, 'oauth-protected-resource'), `${upstream.origin}/.well-known/oauth-protected-resource`];
  const prm = await firstJson(fetchFn, prmUrls);
  if (!prm)
    throw new DiscoveryError(`no protected resource metadata for ${upstream.href} (tried ${prmUrls.join(', ')})`);
  const { resource, authorization_servers: servers } = prm.body;
  if (typeof resource !== 'string' || resource === '')
    throw new DiscoveryError(
      `the protected resource metadata at ${prm.url} names no resource (RFC 9728 section 3.3): refused`,
    );
  if (!sameResource(resource, trust.resource)) {
    throw new DiscoveryError(
      `the protected resource metadata at ${prm.url} names the resource ${resource}, not the upstream's ${trust.resource} (RFC 9728 section 3.3): refused`,
    );
  }
  const named = Array.isArray(servers) ? servers.filter((s): s is string => typeof s === 'string') : [];
  if (named.length === 0)
    throw new DiscoveryError(`the protected resource metadata at ${prm.url} names no authorization server`);
  const chosen = allowedServer(named, trust.issuers);
  if (chosen === undefined) {
    throw new DiscoveryError(
      `the upstream's authorization servers (${named.join(', ')}) are not among those upstream_auth.issuer allows (${trust.issuers.join(', ') || 'none'}): refused, nothing sent`,
    );
  }
  return authorizationServerEndpoint(chosen, fetchFn);
}

/**
 * The token endpoint of an allowed authorization server, from its metadata:
 * RFC 8414, then OpenID discovery; the metadata's `issuer` must be the server's.
 *
 * @throws DiscoveryError when there is no metadata, or it names no issuer, another issuer or no token endpoint.
 */
async function authorizationServerEndpoint(issuer: string, fetchFn: FetchLike): Promise<TokenEndpoint> {
  const url = new URL(issuer);
  const appended = `${url.href.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const asUrls = [wellKnown(url, 'oauth-authorization-server'), wellKnown(url, 'openid-configuration'), appended];
  const metadata = await firstJson(fetchFn, asUrls);
  if (!metadata)
    throw new DiscoveryError(
      `no metadata for the authorization server ${issuer} (tried ${[...new Set(asUrls)].join(', ')})`,
    );
  const {
    issuer: named,
    token_endpoint: tokenEndpoint,
    token_endpoint_auth_methods_supported: methods,
    token_endpoint_auth_signing_alg_values_supported: algs,
  } = metadata.body;
  if (typeof named !== 'string')
    throw new DiscoveryError(`the metadata at ${metadata.url} names no issuer (RFC 8414 section 3.3): refused`);
  if (issuerKey(named) !== issuerKey(issuer))
    throw new DiscoveryError(
      `the metadata at ${metadata.url} names the issuer ${named}, not ${issuer} (RFC 8414 section 3.3): refused`,
    );
  if (typeof tokenEndpoint !== 'string' || !URL.canParse(tokenEndpoint))
    throw new DiscoveryError(`the metadata at ${metadata.url} has no token_endpoint`);
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((m): m is string => typeof m === 'string') : undefined);
  const authMethods = strings(methods);
  const signingAlgs = strings(algs);
  return {
    url: tokenEndpoint,
    issuer: named,
    ...(authMethods ? { authMethods } : {}),
    ...(signingAlgs ? { signingAlgs } : {}),
  };
}
