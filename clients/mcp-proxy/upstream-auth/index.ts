/**
 * `upstream_auth:` put to work: the fetch the upstream transport uses, with
 * the proxy's client-credentials token (client-credentials.ts), for an
 * upstream over Streamable HTTP only.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ProxyConfigError } from '../config.js';
import { authorizedFetch, ClientCredentials } from './client-credentials.js';
import type { UpstreamAuthConfig } from './config.js';

export { authorizedFetch, ClientCredentials, UpstreamAuthError } from './client-credentials.js';
export { discoverTokenEndpoint, resourceMetadataOf } from './discovery.js';
export { parseUpstreamAuth, type UpstreamAuthConfig } from './config.js';

/**
 * The upstream's fetch with the proxy's token, the secret read from the
 * variable the configuration names.
 *
 * @throws ProxyConfigError when the upstream is not a URL (a stdio upstream
 *   takes no token) or the secret's variable is unset.
 *
 * @example
 * ```ts
 * const { fetch } = upstreamAuthFetch(config.upstream_auth, new URL('http://127.0.0.1:9001/mcp'), process.env);
 * ```
 */
export function upstreamAuthFetch(config: UpstreamAuthConfig, upstream: URL | undefined, env: NodeJS.ProcessEnv): { fetch: FetchLike; tokens: ClientCredentials } {
  if (upstream === undefined)
    throw new ProxyConfigError('upstream_auth', ['upstream_auth: goes with --upstream-url (an upstream over Streamable HTTP); a stdio upstream takes no token']);
  const secret = env[config.client_secret_env];
  if (!secret) throw new ProxyConfigError('upstream_auth', [`upstream_auth.client_secret_env: the variable ${config.client_secret_env} is not set (it holds the client secret)`]);
  const tokens = new ClientCredentials({ config, secret, upstream });
  return { fetch: authorizedFetch(tokens), tokens };
}
