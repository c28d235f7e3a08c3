/**
 * `upstream_auth:` in the proxy's configuration (docs/mcp.md#a-protected-upstream): the client credentials the proxy uses to
 * obtain a token for an upstream over Streamable HTTP that answers 401, and
 * the authorization servers it may obtain one from.
 *
 * ```yaml
 * upstream_auth:
 *   client_id: authz-gateway
 *   client_secret_env: UPSTREAM_CLIENT_SECRET   # the secret is read from this variable; or:
 *   # private_key_file: /etc/authz/gateway.pem  # private_key_jwt (RFC 7523): a PEM private key, P-256 (ES256) or RSA (RS256)
 *   # key_id: gateway-2026-01                   # its kid, as registered with the authorization server
 *   issuer: https://login.example.com           # the authorization server(s) discovery may use (a URL or a list)
 *   token_url: https://login.example.com/token  # optional: else discovered from the 401
 *   resource: https://docs.example.com/mcp      # optional: the upstream's resource identifier (default its URL)
 *   scope: mcp:tools                            # optional
 * ```
 */
import { credentialsMayGoTo } from './trust.js';

/** The parsed `upstream_auth:`. */
export interface UpstreamAuthConfig {
  client_id: string;
  /** The environment variable that holds the client secret (never the secret itself); absent with `private_key_file`. */
  client_secret_env?: string;
  /** A PEM private key (P-256 or RSA) for `private_key_jwt`, instead of a secret. */
  private_key_file?: string;
  /** The `kid` of the assertions signed with `private_key_file`. */
  key_id?: string;
  /** The authorization servers (issuer identifiers) discovery may use: `issuer:` in the file, one URL or a list. */
  issuers?: string[];
  /** The token endpoint; discovered per the MCP authorization specification when absent. */
  token_url?: string;
  /** The upstream's resource identifier: the token request's `resource` and what its metadata must name (default the upstream URL). */
  resource?: string;
  /** The `scope` of the token request. */
  scope?: string;
}

const FIELDS = new Set([
  'client_id',
  'client_secret_env',
  'private_key_file',
  'key_id',
  'issuer',
  'token_url',
  'resource',
  'scope',
]);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown, max = 1024): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= max;
const isHttpUrl = (v: unknown): v is string => nonEmpty(v) && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol);

/** A URL the client's credentials may be sent to, else its problem (`upstream_auth.<field>: ...`). */
function credentialsUrlProblem(field: string, url: string): string | undefined {
  return credentialsMayGoTo(new URL(url))
    ? undefined
    : `upstream_auth.${field}: ${url} is neither https nor a loopback address (the client credentials go only over https or to loopback)`;
}

/**
 * Checks `upstream_auth:`; every problem goes to `problems`.
 *
 * @example
 * ```ts
 * const problems: string[] = [];
 * console.log(parseUpstreamAuth({ client_id: 'gw', client_secret_env: 'SECRET', issuer: 'https://login.example.com' }, problems), problems); // => { client_id: 'gw', client_secret_env: 'SECRET', issuers: [ 'https://login.example.com' ] } []
 * ```
 */
export function parseUpstreamAuth(raw: unknown, problems: string[]): UpstreamAuthConfig | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    problems.push(
      'upstream_auth: a mapping with client_id, client_secret_env or private_key_file and key_id, issuer or token_url, and optionally resource and scope',
    );
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(raw))
    if (!FIELDS.has(key)) problems.push(`upstream_auth: unknown field "${key}" (known: ${[...FIELDS].join(', ')})`);
  if (!nonEmpty(raw.client_id)) problems.push('upstream_auth.client_id: required, a non-empty string');
  credentialProblems(raw, problems);
  const issuers =
    raw.issuer === undefined ? undefined : Array.isArray(raw.issuer) ? (raw.issuer as unknown[]) : [raw.issuer];
  if (issuers !== undefined) {
    if (issuers.length === 0 || !issuers.every(isHttpUrl))
      problems.push(
        "upstream_auth.issuer: an http(s) URL or a non-empty list of them (the authorization servers' issuer identifiers)",
      );
    else for (const issuer of issuers) pushIf(problems, credentialsUrlProblem('issuer', issuer));
  }
  if (raw.token_url !== undefined) {
    if (!isHttpUrl(raw.token_url))
      problems.push("upstream_auth.token_url: an http(s) URL (the authorization server's token endpoint)");
    else pushIf(problems, credentialsUrlProblem('token_url', raw.token_url));
  }
  if (issuers === undefined && raw.token_url === undefined) {
    problems.push(
      'upstream_auth: name the authorization server the upstream may send the proxy to (issuer: a URL or a list of them) or its token endpoint (token_url); discovery never trusts another',
    );
  }
  if (raw.resource !== undefined && !isHttpUrl(raw.resource))
    problems.push("upstream_auth.resource: an http(s) URL (the upstream's resource identifier; default its URL)");
  if (raw.scope !== undefined && !nonEmpty(raw.scope))
    problems.push('upstream_auth.scope: a non-empty string of space-separated scopes');
  if (problems.length > before) return undefined;
  const optional = (field: string, as = field) => (raw[field] === undefined ? {} : { [as]: raw[field] as string });
  return {
    client_id: raw.client_id as string,
    ...optional('client_secret_env'),
    ...optional('private_key_file'),
    ...optional('key_id'),
    ...(issuers === undefined ? {} : { issuers: issuers as string[] }),
    ...optional('token_url'),
    ...optional('resource'),
    ...optional('scope'),
  };
}

const pushIf = (problems: string[], problem: string | undefined) =>
  void (problem !== undefined && problems.push(problem));

/** Exactly one way to authenticate: a secret's variable, or a private key file with its key id. */
function credentialProblems(raw: Record<string, unknown>, problems: string[]): void {
  const secret = raw.client_secret_env;
  const keyFile = raw.private_key_file;
  if (secret === undefined && keyFile === undefined) {
    problems.push(
      'upstream_auth: required, client_secret_env (the variable that holds the client secret) or private_key_file and key_id (private_key_jwt)',
    );
  }
  if (secret !== undefined && keyFile !== undefined)
    problems.push(
      'upstream_auth: client_secret_env or private_key_file, not both (one way to authenticate the client)',
    );
  if (secret !== undefined && (!nonEmpty(secret, 256) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(secret))) {
    problems.push('upstream_auth.client_secret_env: the name of the environment variable that holds the client secret');
  }
  if (keyFile !== undefined && !nonEmpty(keyFile))
    problems.push('upstream_auth.private_key_file: the path of a PEM private key (P-256 for ES256, RSA for RS256)');
  if (raw.key_id !== undefined && !nonEmpty(raw.key_id, 256))
    problems.push('upstream_auth.key_id: a non-empty string, the key\'s "kid"');
  if (keyFile !== undefined && raw.key_id === undefined)
    problems.push(
      'upstream_auth.key_id: required with private_key_file, the "kid" the authorization server knows the key by',
    );
  if (keyFile === undefined && raw.key_id !== undefined)
    problems.push('upstream_auth.key_id: goes with private_key_file');
}
