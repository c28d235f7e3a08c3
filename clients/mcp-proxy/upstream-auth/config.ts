/**
 * `upstream_auth:` in the proxy's configuration (docs/mcp.md#a-protected-upstream): the client credentials the proxy uses to
 * obtain a token for an upstream over Streamable HTTP that answers 401.
 *
 * ```yaml
 * upstream_auth:
 *   client_id: authz-gateway
 *   client_secret_env: UPSTREAM_CLIENT_SECRET   # the secret is read from this variable
 *   token_url: https://login.example.com/token  # optional: else discovered from the 401
 *   scope: mcp:tools                            # optional
 * ```
 */

/** The parsed `upstream_auth:`. */
export interface UpstreamAuthConfig {
  client_id: string;
  /** The environment variable that holds the client secret (never the secret itself). */
  client_secret_env: string;
  /** The token endpoint; discovered per the MCP authorization specification when absent. */
  token_url?: string;
  /** The `scope` of the token request. */
  scope?: string;
}

const FIELDS = new Set(['client_id', 'client_secret_env', 'token_url', 'scope']);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown, max = 1024): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= max;

/**
 * Checks `upstream_auth:`; every problem goes to `problems`.
 *
 * @example
 * ```ts
 * const problems: string[] = [];
 * console.log(parseUpstreamAuth({ client_id: 'gw', client_secret_env: 'SECRET' }, problems), problems); // => { client_id: 'gw', client_secret_env: 'SECRET' } []
 * ```
 */
export function parseUpstreamAuth(raw: unknown, problems: string[]): UpstreamAuthConfig | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    problems.push('upstream_auth: a mapping with client_id, client_secret_env and optionally token_url and scope');
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(raw)) if (!FIELDS.has(key)) problems.push(`upstream_auth: unknown field "${key}" (known: ${[...FIELDS].join(', ')})`);
  if (!nonEmpty(raw.client_id)) problems.push('upstream_auth.client_id: required, a non-empty string');
  if (!nonEmpty(raw.client_secret_env, 256) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(raw.client_secret_env)) {
    problems.push('upstream_auth.client_secret_env: required, the name of the environment variable that holds the client secret');
  }
  if (raw.token_url !== undefined && !(nonEmpty(raw.token_url) && URL.canParse(raw.token_url) && /^https?:$/.test(new URL(raw.token_url).protocol))) {
    problems.push("upstream_auth.token_url: an http(s) URL (the authorization server's token endpoint)");
  }
  if (raw.scope !== undefined && !nonEmpty(raw.scope)) problems.push('upstream_auth.scope: a non-empty string of space-separated scopes');
  if (problems.length > before) return undefined;
  return {
    client_id: raw.client_id as string,
    client_secret_env: raw.client_secret_env as string,
    ...(raw.token_url === undefined ? {} : { token_url: raw.token_url as string }),
    ...(raw.scope === undefined ? {} : { scope: raw.scope as string }),
  };
}
