/**
 * `upstream_auth:` put to work: the fetch the upstream transport uses, with
 * the proxy's client-credentials token (client-credentials.ts), for an
 * upstream over Streamable HTTP only.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ProxyConfigError } from '../config.js';
import { loadSigningKey, type SigningKey } from './client-auth.js';
import { authorizedFetch, ClientCredentials } from './client-credentials.js';
import type { UpstreamAuthConfig } from './config.js';

export { ASSERTION_LIFETIME_SECONDS, JWT_BEARER_ASSERTION, loadSigningKey, type SigningKey } from './client-auth.js';
export { authorizedFetch, ClientCredentials } from './client-credentials.js';
export { UpstreamAuthError } from './errors.js';
export { discoverTokenEndpoint, resourceMetadataOf } from './discovery.js';
export { parseUpstreamAuth, type UpstreamAuthConfig } from './config.js';
export { credentialsMayGoTo } from './trust.js';

/**
 * The upstream's fetch with the proxy's token, the secret read from the
 * variable the configuration names, or the private key from its file.
 *
 * @throws ProxyConfigError when the upstream is not a URL (a stdio upstream
 *   takes no token), the secret's variable is unset, or the key file cannot
 *   be used.
 *
 * @example
 * ```ts
 * const { fetch } = upstreamAuthFetch(config.upstream_auth, new URL('http://127.0.0.1:9001/mcp'), process.env);
 * ```
 */
export function upstreamAuthFetch(
  config: UpstreamAuthConfig,
  upstream: URL | undefined,
  env: NodeJS.ProcessEnv,
): { fetch: FetchLike; tokens: ClientCredentials } {
  if (upstream === undefined)
    throw new ProxyConfigError('upstream_auth', [
      'upstream_auth: goes with --upstream-url (an upstream over Streamable HTTP); a stdio upstream takes no token',
    ]);
  const tokens = new ClientCredentials({ config, upstream, ...credentialsOf(config, env) });
  return { fetch: authorizedFetch(tokens), tokens };
}

/** The client's secret or signing key, as the configuration says where to find it. */
function credentialsOf(
  config: UpstreamAuthConfig,
  env: NodeJS.ProcessEnv,
): { secret: string } | { signingKey: SigningKey } {
  if (config.private_key_file !== undefined) {
    try {
      return { signingKey: loadSigningKey(config.private_key_file, config.key_id!) };
    } catch (error) {
      throw new ProxyConfigError('upstream_auth', [`upstream_auth.private_key_file: ${(error as Error).message}`]);
    }
  }
  const secret = env[config.client_secret_env!];
  if (!secret)
    throw new ProxyConfigError('upstream_auth', [
      `upstream_auth.client_secret_env: the variable ${config.client_secret_env} is not set (it holds the client secret)`,
    ]);
  return { secret };
}
