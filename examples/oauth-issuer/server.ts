/**
 * A stand-in OAuth 2.1 authorization server, small enough to read in one
 * sitting, for trying the MCP gateway's token checks (`authz mcp-proxy` with
 * `auth:`, docs/mcp.md "One gateway for many agents") and for its tests. It is
 * not a real identity provider: it knows a fixed list of clients, issues
 * tokens with the client-credentials grant only, and keeps its keys in memory.
 *
 * - `GET /.well-known/oauth-authorization-server` (RFC 8414) and
 *   `/.well-known/openid-configuration`: its metadata;
 * - `GET /jwks`: its public keys (ES256; rotated with `rotate()`, removed with
 *   `removeKey()`);
 * - `POST /token` (`grant_type=client_credentials`, the client authenticated
 *   with HTTP Basic or `client_id`/`client_secret` in the form, `resource`
 *   required (RFC 8707: the token's `aud`), `scope` optional): a JWT access
 *   token (RFC 9068) with `iss`, `sub` (the client's user, else its id),
 *   `aud`, `client_id`, `scope`, `iat`, `exp`, `jti`. A stand-in extension:
 *   `user=<id>` in the form makes the token act for that user (a real server
 *   learns the user from a sign-in, e.g. the authorization-code flow).
 *
 * Run: `node dist/examples/oauth-issuer/server.js` (PORT, default 9000; HOST,
 * default 127.0.0.1; CLIENTS, default
 * `support-bot-7:secret-7:alice,support-bot-8:secret-8:bob`, each
 * `client_id:client_secret[:user]`; SCOPES, the scopes every client may ask
 * for, default `mcp:tools`). It prints one JSON line with its issuer URL.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import { closeOnSignals, listenAddress, runAsMain } from '../shared/run-main.js';

/** A client the stand-in knows. */
export interface StandInClient {
  client_id: string;
  client_secret: string;
  /** The user its tokens act for (`sub`); default the client itself. */
  user?: string;
  /** Scopes it may be granted; default the server's `scopes`. */
  scopes?: string[];
}

export interface StandInIssuerOptions {
  clients: StandInClient[];
  /** Scopes a client may ask for when it has no list of its own (default `['mcp:tools']`). */
  scopes?: string[];
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** Lifetime of the tokens of `/token`, seconds (default 3600). */
  tokenSeconds?: number;
  /** Which metadata documents it serves (default both). */
  metadata?: 'oauth' | 'openid' | 'both';
}

/** What `mint()` signs: any claims; `expiresIn` (seconds, may be negative) sets `exp`. */
export interface MintOptions {
  claims: JWTPayload;
  expiresIn?: number;
  /** Sign with this key (default the current one). */
  kid?: string;
  /** Leave `iss` as given in `claims` (default: this issuer). */
  keepIssuer?: boolean;
}

export interface StandInIssuer {
  /** The issuer identifier: `http://HOST:PORT`. */
  readonly issuer: string;
  readonly jwksUri: string;
  readonly tokenEndpoint: string;
  /** The kid new tokens are signed with. */
  readonly currentKid: string;
  /** Times `/jwks` was read. */
  readonly jwksReads: number;
  /** Signs a token directly (tests, and tokens the token endpoint would not issue). */
  mint(options: MintOptions): Promise<string>;
  /** Adds a new key and signs with it from now on; the old key stays published. Answers the new kid. */
  rotate(): Promise<string>;
  /** Stops publishing a key (tokens it signed are refused once a verifier reads the key set again). */
  removeKey(kid: string): void;
  close(): Promise<void>;
}

interface SigningKey {
  kid: string;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  publicJwk: JWK;
}

async function newKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = `key-${randomUUID().slice(0, 8)}`;
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

const oauthError = (
  res: ServerResponse,
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
) => json(res, status, { error, error_description: description }, headers);

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let text = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    text += chunk.toString('utf8');
    if (text.length > 64 * 1024) break;
  }
  return new URLSearchParams(text);
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The client's id and secret: HTTP Basic (form-urlencoded parts, RFC 6749 2.3.1) or the form. */
function credentials(req: IncomingMessage, form: URLSearchParams): { id: string; secret: string } | null {
  const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const text = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = text.indexOf(':');
    if (colon < 0) return null;
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    try {
      return { id: decode(text.slice(0, colon)), secret: decode(text.slice(colon + 1)) };
    } catch {
      return null;
    }
  }
  const id = form.get('client_id');
  const secret = form.get('client_secret');
  return id !== null && secret !== null ? { id, secret } : null;
}

/**
 * Starts the stand-in on HOST:PORT.
 *
 * @example
 * ```ts
 * const as = await startStandInIssuer({ clients: [{ client_id: 'research-bot', client_secret: 's3cret', user: 'alice' }] });
 * const token = await as.mint({ claims: { client_id: 'research-bot', sub: 'alice', aud: 'http://127.0.0.1:8090/mcp', scope: 'mcp:tools' }, expiresIn: 600 });
 * await as.close();
 * ```
 */
export async function startStandInIssuer(options: StandInIssuerOptions): Promise<StandInIssuer> {
  const keys: SigningKey[] = [await newKey()];
  let current = keys[0]!;
  let jwksReads = 0;
  const defaultScopes = options.scopes ?? ['mcp:tools'];
  const tokenSeconds = options.tokenSeconds ?? 3600;
  const serveMetadata = options.metadata ?? 'both';
  let issuer = '';

  const sign = async ({ claims, expiresIn = tokenSeconds, kid, keepIssuer }: MintOptions): Promise<string> => {
    const key = kid === undefined ? current : keys.find((k) => k.kid === kid);
    if (!key) throw new Error(`no key ${kid}`);
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iat: now, jti: randomUUID(), ...(keepIssuer ? {} : { iss: issuer }), ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
      .setExpirationTime(now + expiresIn)
      .sign(key.privateKey);
  };

  const metadata = () => ({
    issuer,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    authorization_endpoint: `${issuer}/authorize`,
    response_types_supported: [],
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: [...new Set([...defaultScopes, ...options.clients.flatMap((c) => c.scopes ?? [])])],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['ES256'],
  });

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    const given = credentials(req, form);
    const client =
      given && options.clients.find((c) => same(c.client_id, given.id) && same(c.client_secret, given.secret));
    if (!client)
      return oauthError(res, 401, 'invalid_client', 'unknown client or wrong secret', {
        'www-authenticate': 'Basic realm="stand-in"',
      });
    if (form.get('grant_type') !== 'client_credentials')
      return oauthError(
        res,
        400,
        'unsupported_grant_type',
        'this stand-in issues tokens with grant_type=client_credentials only',
      );
    const resource = form.get('resource');
    if (!resource || !URL.canParse(resource))
      return oauthError(
        res,
        400,
        'invalid_target',
        'resource is required: the URL of the MCP endpoint the token is for (RFC 8707)',
      );
    const allowed = client.scopes ?? defaultScopes;
    const asked = (form.get('scope') ?? '').split(' ').filter((s) => s !== '');
    const refused = asked.filter((s) => !allowed.includes(s));
    if (refused.length > 0)
      return oauthError(res, 400, 'invalid_scope', `${client.client_id} may not ask for ${refused.join(' ')}`);
    const scope = (asked.length > 0 ? asked : allowed).join(' ');
    const user = form.get('user') || client.user || client.client_id;
    const accessToken = await sign({
      claims: { sub: user, aud: resource, client_id: client.client_id, ...(scope ? { scope } : {}) },
    });
    json(res, 200, {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: tokenSeconds,
      ...(scope ? { scope } : {}),
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server' && serveMetadata !== 'openid')
      return json(res, 200, metadata());
    if (req.method === 'GET' && path === '/.well-known/openid-configuration' && serveMetadata !== 'oauth')
      return json(res, 200, metadata());
    if (req.method === 'GET' && path === '/jwks') {
      jwksReads++;
      return json(res, 200, { keys: keys.map((k) => k.publicJwk) });
    }
    if (req.method === 'POST' && path === '/token') return token(req, res);
    if (path === '/authorize')
      return oauthError(
        res,
        400,
        'unsupported_response_type',
        'this stand-in has no sign-in: use the client-credentials grant at /token',
      );
    json(res, 404, { error: 'not_found' });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => oauthError(res, 500, 'server_error', (error as Error).message));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = (options.host ?? '127.0.0.1').includes(':') ? `[${options.host}]` : (options.host ?? '127.0.0.1');
  issuer = `http://${host}:${port}`;

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    tokenEndpoint: `${issuer}/token`,
    get currentKid() {
      return current.kid;
    },
    get jwksReads() {
      return jwksReads;
    },
    mint: sign,
    async rotate() {
      current = await newKey();
      keys.push(current);
      return current.kid;
    },
    removeKey(kid) {
      const at = keys.findIndex((k) => k.kid === kid);
      if (at >= 0) keys.splice(at, 1);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `id:secret[:user],...` */
function parseClients(text: string): StandInClient[] {
  return text
    .split(',')
    .filter((c) => c.trim() !== '')
    .map((entry) => {
      const [client_id, client_secret, user] = entry.trim().split(':');
      if (!client_id || !client_secret) throw new Error(`CLIENTS: "${entry}" is not client_id:client_secret[:user]`);
      return { client_id, client_secret, ...(user ? { user } : {}) };
    });
}

async function main(): Promise<void> {
  const as = await startStandInIssuer({
    ...listenAddress(9000),
    clients: parseClients(process.env.CLIENTS ?? 'support-bot-7:secret-7:alice,support-bot-8:secret-8:bob'),
    scopes: (process.env.SCOPES ?? 'mcp:tools').split(/[ ,]+/).filter((s) => s !== ''),
  });
  console.log(JSON.stringify({ issuer: as.issuer, token_endpoint: as.tokenEndpoint, jwks_uri: as.jwksUri }));
  console.error(
    `stand-in authorization server: issuer ${as.issuer}, tokens at ${as.tokenEndpoint} (client credentials)`,
  );
  closeOnSignals(as);
}

runAsMain(import.meta.url, main);
