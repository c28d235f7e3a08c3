/**
 * The proxy's own token for an upstream that wants one (docs/mcp.md#a-protected-upstream): obtained with the OAuth
 * client-credentials grant (RFC 6749 section 4.4) with the RFC 8707
 * `resource` = the upstream's resource identifier (its URL unless configured),
 * cached until `expires_in` - 30 s, and attached to every request to the
 * upstream by `authorizedFetch`. On a 401 the proxy obtains a token
 * (discovering the token endpoint, among the allowed authorization servers,
 * when the configuration names none) and retries the request once; a token
 * that cannot be obtained fails the request (the relay answers `-32603`,
 * nothing is forwarded). The client's credentials (client-auth.ts) go only
 * over https or to loopback (trust.ts). The agent's own token is never
 * forwarded: the only `Authorization` the upstream sees is this one.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { authenticate, type ClientAuthentication, type SigningKey } from './client-auth.js';
import type { UpstreamAuthConfig } from './config.js';
import { discoverTokenEndpoint, type TokenEndpoint } from './discovery.js';
import { UpstreamAuthError } from './errors.js';
import { credentialsMayGoTo } from './trust.js';

/** Seconds before `expires_in` runs out at which a cached token is no longer used. */
export const EXPIRY_MARGIN_SECONDS = 30;

export interface ClientCredentialsOptions {
  config: UpstreamAuthConfig;
  /** The client secret (read from `config.client_secret_env` by the caller); or `signingKey`. */
  secret?: string;
  /** The private key of `private_key_jwt` (read from `config.private_key_file` by the caller); or `secret`. */
  signingKey?: SigningKey;
  /** The upstream MCP endpoint (its resource identifier unless `config.resource` names another). */
  upstream: URL;
  /** The fetch for the token endpoint and metadata (default global fetch). */
  fetch?: FetchLike;
  /** Milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

/**
 * One client's tokens for one upstream: the cached token, its renewal, the
 * token endpoint (configured or discovered once).
 *
 * @example
 * ```ts
 * const tokens = new ClientCredentials({ config: { client_id: 'gw', client_secret_env: 'S', issuers: ['http://127.0.0.1:9000'] }, secret: 's3cret', upstream: new URL('http://127.0.0.1:9001/mcp') });
 * const fetchUpstream = authorizedFetch(tokens); // for StreamableHTTPClientTransport's `fetch`
 * ```
 */
export class ClientCredentials {
  readonly #o: ClientCredentialsOptions;
  readonly #how: ClientAuthentication;
  readonly #resource: string;
  readonly #fetch: FetchLike;
  readonly #now: () => number;
  #endpoint: TokenEndpoint | undefined;
  #cached: { token: string; until: number } | undefined;
  #pending: Promise<string> | undefined;
  #issued = 0;

  constructor(options: ClientCredentialsOptions) {
    const { config, secret, signingKey } = options;
    if ((secret === undefined) === (signingKey === undefined))
      throw new TypeError('ClientCredentials: a secret or a signingKey, one of them');
    this.#o = options;
    this.#how = secret !== undefined ? { secret } : { signingKey: signingKey! };
    this.#resource = config.resource ?? options.upstream.href;
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init));
    this.#now = options.now ?? Date.now;
    // A configured token endpoint: an assertion's aud is the issuer when the configuration names exactly one.
    const issuer = config.issuers?.length === 1 ? config.issuers[0] : undefined;
    if (config.token_url !== undefined)
      this.#endpoint = { url: config.token_url, ...(issuer === undefined ? {} : { issuer }) };
  }

  /** Tokens obtained so far. */
  get issued(): number {
    return this.#issued;
  }

  /** Whether a token was ever obtained (from then on every request carries one). */
  get active(): boolean {
    return this.#issued > 0;
  }

  /** The cached token while it is fresh, else undefined. */
  cached(): string | undefined {
    return this.#cached !== undefined && this.#now() < this.#cached.until ? this.#cached.token : undefined;
  }

  /** Forgets a token the upstream refused (a newer one obtained meanwhile is kept). */
  drop(token: string | undefined): void {
    if (token !== undefined && this.#cached?.token === token) this.#cached = undefined;
  }

  /**
   * A fresh token: the cached one, else a new one (one request at a time;
   * concurrent callers share it).
   *
   * @param wwwAuthenticate - the upstream's 401 header, for discovery.
   * @throws UpstreamAuthError (or the discovery's error) when none can be obtained.
   */
  token(wwwAuthenticate: string | null = null): Promise<string> {
    const cached = this.cached();
    if (cached !== undefined) return Promise.resolve(cached);
    this.#pending ??= this.#obtain(wwwAuthenticate).finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  async #obtain(wwwAuthenticate: string | null): Promise<string> {
    const { config, upstream } = this.#o;
    this.#endpoint ??= await discoverTokenEndpoint(upstream, wwwAuthenticate, this.#fetch, {
      resource: this.#resource,
      issuers: config.issuers ?? [],
    });
    const endpoint = this.#endpoint;
    if (!URL.canParse(endpoint.url) || !credentialsMayGoTo(new URL(endpoint.url))) {
      throw new UpstreamAuthError(
        `the token endpoint ${endpoint.url} is neither https nor a loopback address: the client's credentials are not sent there`,
      );
    }
    const form = new URLSearchParams({ grant_type: 'client_credentials', resource: this.#resource });
    if (config.scope !== undefined) form.set('scope', config.scope);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    await authenticate(this.#how, config.client_id, endpoint, form, headers, this.#now());
    let response: Response;
    try {
      response = await this.#fetch(endpoint.url, { method: 'POST', headers, body: form.toString() });
    } catch (error) {
      throw new UpstreamAuthError(`the token endpoint ${endpoint.url} cannot be reached: ${(error as Error).message}`);
    }
    const body: unknown = await response.json().catch(() => undefined);
    const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    if (!response.ok) {
      const why =
        typeof fields.error === 'string'
          ? `${fields.error}${typeof fields.error_description === 'string' ? `: ${fields.error_description}` : ''}`
          : `HTTP ${response.status}`;
      throw new UpstreamAuthError(`the token endpoint ${endpoint.url} refused the client credentials (${why})`);
    }
    const { access_token: token, token_type: type, expires_in: expiresIn } = fields;
    if (typeof token !== 'string' || token === '')
      throw new UpstreamAuthError(`the token endpoint ${endpoint.url} answered no access_token`);
    if (type !== undefined && (typeof type !== 'string' || type.toLowerCase() !== 'bearer'))
      throw new UpstreamAuthError(
        `the token endpoint ${endpoint.url} answered a ${String(type)} token, not a Bearer one`,
      );
    this.#issued++;
    const lifetime = typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? expiresIn : undefined;
    // Without expires_in the token is kept until the upstream refuses it.
    const until =
      lifetime === undefined ? Number.POSITIVE_INFINITY : this.#now() + (lifetime - EXPIRY_MARGIN_SECONDS) * 1000;
    this.#cached = { token, until };
    return token;
  }
}

/** `init` with `Authorization: Bearer <token>` (replacing any other). */
function withToken(init: RequestInit | undefined, token: string | undefined): RequestInit {
  const headers = new Headers(init?.headers);
  headers.delete('authorization');
  if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/**
 * A fetch for the upstream transport that carries the proxy's token: once a
 * token was needed, every request gets a fresh one (renewed when the cached
 * one is stale); a 401 gets a new token and one retry.
 *
 * @throws UpstreamAuthError (from the returned fetch) when a token cannot be obtained.
 */
export function authorizedFetch(
  tokens: ClientCredentials,
  base: FetchLike = (url, init) => fetch(url, init),
): FetchLike {
  return async (url, init) => {
    const sent = tokens.active ? await tokens.token() : undefined;
    const first = await base(url, withToken(init, sent));
    if (first.status !== 401) return first;
    const challenge = first.headers.get('www-authenticate');
    await first.body?.cancel().catch(() => undefined);
    tokens.drop(sent);
    const token = await tokens.token(challenge);
    return base(url, withToken(init, token));
  };
}
