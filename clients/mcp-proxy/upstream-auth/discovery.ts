/**
 * Finding an upstream's token endpoint as the MCP authorization specification
 * (2025-11-25) says, for `upstream_auth:` without `token_url`:
 *
 * 1. the protected resource's metadata (RFC 9728): the URL in the 401's
 *    `WWW-Authenticate: Bearer resource_metadata="..."`, else the upstream's
 *    well-known path (`/.well-known/oauth-protected-resource` + its path,
 *    then at the root);
 * 2. its first `authorization_servers` entry;
 * 3. that server's metadata: RFC 8414 (`/.well-known/oauth-authorization-server`,
 *    path-inserted), then OpenID discovery (`/.well-known/openid-configuration`,
 *    path-inserted, then appended);
 * 4. its `token_endpoint`, and `client_secret_basic` unless
 *    `token_endpoint_auth_methods_supported` lists only `client_secret_post`.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

/** Where and how the proxy asks for tokens. */
export interface TokenEndpoint {
  url: string;
  /** How the client authenticates: HTTP Basic (the default) or the form body. */
  method: 'client_secret_basic' | 'client_secret_post';
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
  const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/i.exec(header.replace(/^\s*Bearer\s+/i, ' '));
  const value = match ? (match[1]?.replace(/\\(.)/g, '$1') ?? match[2]) : undefined;
  return value !== undefined && URL.canParse(value) ? value : undefined;
}

/** `origin` + `/.well-known/<name>` + the URL's path (RFC 8414 / RFC 9728 path insertion; none for `/`). */
function wellKnown(url: URL, name: string): string {
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}/.well-known/${name}${path}`;
}

/** The JSON object at the first of `urls` that answers 200 with one; undefined when none does. */
async function firstJson(fetchFn: FetchLike, urls: string[]): Promise<{ url: string; body: Record<string, unknown> } | undefined> {
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

/**
 * The token endpoint of an upstream that answered 401.
 *
 * @param upstream - the upstream MCP endpoint.
 * @param wwwAuthenticate - the 401's `WWW-Authenticate` header, if any.
 * @throws DiscoveryError naming the step that failed.
 */
export async function discoverTokenEndpoint(upstream: URL, wwwAuthenticate: string | null, fetchFn: FetchLike): Promise<TokenEndpoint> {
  const declared = resourceMetadataOf(wwwAuthenticate);
  const prmUrls = declared ? [declared] : [wellKnown(upstream, 'oauth-protected-resource'), `${upstream.origin}/.well-known/oauth-protected-resource`];
  const prm = await firstJson(fetchFn, prmUrls);
  if (!prm) throw new DiscoveryError(`no protected resource metadata for ${upstream.href} (tried ${prmUrls.join(', ')})`);
  const servers = prm.body.authorization_servers;
  const first = Array.isArray(servers) ? servers[0] : undefined;
  if (typeof first !== 'string' || !URL.canParse(first)) throw new DiscoveryError(`the protected resource metadata at ${prm.url} names no authorization server`);
  const issuer = new URL(first);
  const appended = `${issuer.href.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const asUrls = [wellKnown(issuer, 'oauth-authorization-server'), wellKnown(issuer, 'openid-configuration'), appended];
  const metadata = await firstJson(fetchFn, asUrls);
  if (!metadata) throw new DiscoveryError(`no metadata for the authorization server ${first} (tried ${[...new Set(asUrls)].join(', ')})`);
  const { issuer: named, token_endpoint: tokenEndpoint, token_endpoint_auth_methods_supported: methods } = metadata.body;
  if (typeof named === 'string' && named.replace(/\/+$/, '') !== first.replace(/\/+$/, '')) {
    throw new DiscoveryError(`the metadata at ${metadata.url} names the issuer ${named}, not ${first}`);
  }
  if (typeof tokenEndpoint !== 'string' || !URL.canParse(tokenEndpoint)) throw new DiscoveryError(`the metadata at ${metadata.url} has no token_endpoint`);
  const listed = Array.isArray(methods) ? methods : [];
  const postOnly = listed.includes('client_secret_post') && !listed.includes('client_secret_basic');
  return { url: tokenEndpoint, method: postOnly ? 'client_secret_post' : 'client_secret_basic' };
}
