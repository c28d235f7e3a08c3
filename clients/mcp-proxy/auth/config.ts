/**
 * The `auth:` section of the proxy's configuration (docs/mcp.md#one-gateway-for-many-agents): with it, the proxy's HTTP listener is an
 * OAuth 2.1 protected resource and each request's identity comes from its
 * bearer token.
 *
 * ```yaml
 * auth:
 *   issuer: https://login.example.com        # the authorization server
 *   jwks_uri: https://login.example.com/jwks # optional: else from the issuer's metadata
 *   audience: https://tools.example.com/mcp  # default: --public-url
 *   agent_claim: client_id                   # default client_id, then azp
 *   user_claim: sub                          # becomes on_behalf_of
 *   scopes: [mcp:tools]                      # required scopes (optional)
 *   jwks_cache_seconds: 300                  # the key set is read again this often
 *   max_token_lifetime_seconds: 86400        # longest exp - iat taken (default 24 h)
 * ```
 */

/** The checked `auth:` section. */
export interface AuthConfig {
  /** The authorization server's issuer identifier: tokens' `iss` must equal it. */
  issuer: string;
  /** Where the issuer's keys are; when absent, its metadata's `jwks_uri`. */
  jwks_uri?: string;
  /** The tokens' required `aud` (RFC 8707 resource); when absent, the proxy's public URL. */
  audience?: string;
  /** The claim that names the agent; when absent, `client_id`, then `azp`. */
  agent_claim?: string;
  /** The claim that names the user the agent acts for (`on_behalf_of`). */
  user_claim: string;
  /** Scopes every token must carry. */
  scopes: string[];
  /** Seconds after which the key set is read again (also read again early for an unknown `kid`). */
  jwks_cache_seconds: number;
  /** Longest lifetime (`exp - iat`, or `exp` - now without `iat`) of a token taken, in seconds. */
  max_token_lifetime_seconds: number;
}

export const DEFAULT_JWKS_CACHE_SECONDS = 300;
/** Default longest token lifetime: 24 hours. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 86_400;
const FIELDS = [
  'issuer',
  'jwks_uri',
  'audience',
  'agent_claim',
  'user_claim',
  'scopes',
  'jwks_cache_seconds',
  'max_token_lifetime_seconds',
];
/** RFC 6749's scope-token: printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isHttpUrl = (v: unknown): v is string =>
  typeof v === 'string' && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol);
const claimName = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9_.:-]{1,100}$/.test(v);

/**
 * Checks the `auth:` value of a configuration; every problem goes to
 * `problems` (prefixed `auth.`), and the section is answered only when it had
 * none.
 *
 * @example
 * ```ts
 * const problems: string[] = [];
 * const auth = parseAuthConfig({ issuer: 'https://login.example.com', scopes: ['mcp:tools'] }, problems);
 * console.log(auth?.user_claim, auth?.jwks_cache_seconds, auth?.max_token_lifetime_seconds, problems); // => sub 300 86400 []
 * ```
 */
export function parseAuthConfig(raw: unknown, problems: string[]): AuthConfig | undefined {
  const before = problems.length;
  if (!isRecord(raw)) {
    problems.push(
      'auth: a mapping with issuer (required), jwks_uri, audience, agent_claim, user_claim, scopes, jwks_cache_seconds, max_token_lifetime_seconds',
    );
    return undefined;
  }
  for (const key of Object.keys(raw))
    if (!FIELDS.includes(key)) problems.push(`auth: unknown field "${key}" (known: ${FIELDS.join(', ')})`);
  if (!isHttpUrl(raw.issuer))
    problems.push("auth.issuer: required, the authorization server's issuer URL (http or https)");
  if (raw.jwks_uri !== undefined && !isHttpUrl(raw.jwks_uri))
    problems.push("auth.jwks_uri: an http(s) URL of the issuer's key set");
  if (raw.audience !== undefined && !(typeof raw.audience === 'string' && URL.canParse(raw.audience)))
    problems.push('auth.audience: an absolute URL, the resource the tokens are issued for (default: --public-url)');
  for (const field of ['agent_claim', 'user_claim'] as const) {
    if (raw[field] !== undefined && !claimName(raw[field]))
      problems.push(`auth.${field}: a claim name (letters, digits, _ . : -)`);
  }
  const scopes = raw.scopes ?? [];
  if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || !SCOPE_TOKEN.test(s)))
    problems.push('auth.scopes: a list of scope names (no spaces), e.g. [mcp:tools]');
  const cache = raw.jwks_cache_seconds ?? DEFAULT_JWKS_CACHE_SECONDS;
  if (typeof cache !== 'number' || !Number.isInteger(cache) || cache < 1 || cache > 86_400)
    problems.push('auth.jwks_cache_seconds: a whole number of seconds, 1..86400');
  const lifetime = raw.max_token_lifetime_seconds ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS;
  if (typeof lifetime !== 'number' || !Number.isInteger(lifetime) || lifetime < 60 || lifetime > 31_536_000)
    problems.push(
      'auth.max_token_lifetime_seconds: a whole number of seconds, 60..31536000 (the longest exp - iat taken)',
    );
  if (problems.length > before) return undefined;
  return {
    issuer: raw.issuer as string,
    ...(raw.jwks_uri === undefined ? {} : { jwks_uri: raw.jwks_uri as string }),
    ...(raw.audience === undefined ? {} : { audience: raw.audience as string }),
    ...(raw.agent_claim === undefined ? {} : { agent_claim: raw.agent_claim as string }),
    user_claim: (raw.user_claim as string | undefined) ?? 'sub',
    scopes: [...new Set(scopes as string[])],
    jwks_cache_seconds: cache as number,
    max_token_lifetime_seconds: lifetime as number,
  };
}
