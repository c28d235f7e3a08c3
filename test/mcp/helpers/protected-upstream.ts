/**
 * For the tests of `upstream_auth:`, on 127.0.0.1 in the test's own process:
 *
 * - a stand-in authorization server: RFC 8414 metadata (or only OpenID
 *   discovery) and a client-credentials token endpoint that checks the
 *   client (HTTP Basic, the form body, or a `private_key_jwt` assertion
 *   verified with jose against the client's public key), issues opaque
 *   tokens `tok-<n>` with a chosen `expires_in`, can revoke them or refuse
 *   every client, and records each token request (and every secret and
 *   assertion it was sent: what an authorization server the proxy must not
 *   trust would have learnt);
 * - an MCP server over Streamable HTTP (the SDK's McpServer, stateless)
 *   behind a bearer check against that server's live tokens: 401 with
 *   `WWW-Authenticate: Bearer resource_metadata="..."` (or without it), RFC
 *   9728 metadata at its well-known path, and a record of every request's
 *   method, path and headers as the upstream received them;
 * - a host of fixed JSON documents (an attacker's protected resource
 *   metadata, say) that records what was asked of it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  decodeProtectedHeader,
  jwtVerify,
  type CryptoKey,
  type JWTPayload,
  type KeyObject,
  type ProtectedHeaderParameters,
} from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** One token request as the authorization server saw it. */
export interface TokenRequest {
  /** How the client authenticated. */
  via: 'basic' | 'post' | 'jwt' | 'none';
  clientId: string | undefined;
  form: Record<string, string>;
}

export interface AuthServerOptions {
  clientId: string;
  secret: string;
  /** `token_endpoint_auth_methods_supported` (default: absent). */
  authMethods?: string[];
  /** Serve only OpenID discovery, not RFC 8414 metadata. */
  openidOnly?: boolean;
  /** A path in the issuer (`/tenant-a`): metadata at the path-inserted well-known URLs only. */
  issuerPath?: string;
  /** The client's public key: `private_key_jwt` assertions are verified with it. */
  publicKey?: CryptoKey | KeyObject;
  /** The `aud` an assertion must have: the issuer (default) or the token endpoint. */
  assertionAudience?: 'issuer' | 'token_endpoint';
  /** `token_endpoint_auth_signing_alg_values_supported` (default: absent). */
  signingAlgs?: string[];
  /** The `token_endpoint` of the metadata (default `<url>/token`). */
  tokenEndpoint?: string;
}

/** A `private_key_jwt` assertion as the authorization server received it. */
export interface ReceivedAssertion {
  header: ProtectedHeaderParameters;
  /** Its claims when its signature verified, else undefined. */
  claims: JWTPayload | undefined;
  /** Why it was refused, if it was. */
  error?: string;
}

export class StandInAuthServer {
  url = '';
  readonly requests: TokenRequest[] = [];
  /** Every client secret it was sent (HTTP Basic or form). */
  readonly secrets: string[] = [];
  /** Every client assertion it was sent. */
  readonly assertions: ReceivedAssertion[] = [];
  /** The `expires_in` of the next tokens. */
  expiresIn = 3600;
  /** Refuse every client (invalid_client). */
  refuse = false;
  readonly #live = new Set<string>();
  #seq = 0;
  readonly #server: Server;

  constructor(readonly options: AuthServerOptions) {
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    this.url = await listen(this.#server);
    return this;
  }

  close(): Promise<void> {
    return close(this.#server);
  }

  /** The issuer identifier: the server's URL plus `issuerPath`. */
  get issuer(): string {
    return `${this.url}${this.options.issuerPath ?? ''}`;
  }

  /** Whether a token was issued here and not revoked. */
  valid(token: string): boolean {
    return this.#live.has(token);
  }

  /** Revokes every token issued so far. */
  revokeAll(): void {
    this.#live.clear();
  }

  #metadata() {
    return {
      issuer: this.issuer,
      token_endpoint: this.options.tokenEndpoint ?? `${this.url}/token`,
      grant_types_supported: ['client_credentials'],
      ...(this.options.authMethods ? { token_endpoint_auth_methods_supported: this.options.authMethods } : {}),
      ...(this.options.signingAlgs
        ? { token_endpoint_auth_signing_alg_values_supported: this.options.signingAlgs }
        : {}),
    };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', this.url).pathname;
    const suffix = this.options.issuerPath ?? '';
    if (req.method === 'GET' && path === `/.well-known/oauth-authorization-server${suffix}` && !this.options.openidOnly)
      return json(res, 200, this.#metadata());
    if (req.method === 'GET' && path === `/.well-known/openid-configuration${suffix}`)
      return json(res, 200, { ...this.#metadata(), jwks_uri: `${this.url}/jwks` });
    if (req.method !== 'POST' || path !== '/token') return json(res, 404, { error: 'not_found' });
    const form = Object.fromEntries(new URLSearchParams(await bodyOf(req)));
    let via: TokenRequest['via'] = 'none';
    let clientId: string | undefined;
    let secret: string | undefined;
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [id, pass] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
      [via, clientId, secret] = [
        'basic',
        decodeURIComponent(id!.replace(/\+/g, ' ')),
        decodeURIComponent((pass ?? '').replace(/\+/g, ' ')),
      ];
    } else if (form.client_assertion !== undefined) {
      via = 'jwt';
      const received = await this.#assertion(form.client_assertion);
      this.assertions.push(received);
      clientId =
        typeof received.claims?.iss === 'string' && received.claims.sub === received.claims.iss
          ? received.claims.iss
          : undefined;
    } else if (form.client_id !== undefined) {
      [via, clientId, secret] = ['post', form.client_id, form.client_secret];
    }
    if (secret !== undefined) this.secrets.push(secret);
    const { client_id: _id, client_secret: _secret, client_assertion: _assertion, ...rest } = form;
    this.requests.push({ via, clientId, form: rest });
    const authenticated =
      via === 'jwt'
        ? clientId !== undefined && form.client_assertion_type === JWT_BEARER
        : secret === this.options.secret;
    if (this.refuse || clientId !== this.options.clientId || !authenticated)
      return json(res, 401, { error: 'invalid_client', error_description: 'unknown client or wrong secret' });
    if (form.grant_type !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
    const token = `tok-${++this.#seq}`;
    this.#live.add(token);
    return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: this.expiresIn });
  }

  /** A client assertion checked as RFC 7523 section 3 says: signature by the client's key, `aud` = this issuer, `exp`. */
  async #assertion(jwt: string): Promise<ReceivedAssertion> {
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(jwt);
    } catch (error) {
      return { header: {}, claims: undefined, error: (error as Error).message };
    }
    if (!this.options.publicKey) return { header, claims: undefined, error: 'no key registered for the client' };
    try {
      const { payload } = await jwtVerify(jwt, this.options.publicKey, {
        audience: this.options.assertionAudience === 'token_endpoint' ? this.#metadata().token_endpoint : this.issuer,
        requiredClaims: ['exp', 'jti', 'iat'],
      });
      return { header, claims: payload };
    } catch (error) {
      return { header, claims: undefined, error: (error as Error).message };
    }
  }
}

/** RFC 7523's `client_assertion_type`. */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** Fixed JSON documents by path (an attacker's metadata, say), and the paths that were asked for. */
export class JsonHost {
  url = '';
  readonly asked: string[] = [];
  readonly #server: Server;

  /** `documents(url)` gives the documents once the host's URL is known. */
  constructor(readonly documents: (url: string) => Record<string, unknown>) {
    this.#server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', this.url).pathname;
      this.asked.push(path);
      const doc = this.documents(this.url)[path];
      return doc === undefined ? json(res, 404, { error: 'not_found' }) : json(res, 200, doc);
    });
  }

  async start(): Promise<this> {
    this.url = await listen(this.#server);
    return this;
  }

  close(): Promise<void> {
    return close(this.#server);
  }
}

/** One request as the protected upstream received it. */
export interface UpstreamRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON-RPC method of a POST, when there is one. */
  rpc?: string;
  /** Whether its token was accepted. */
  admitted: boolean;
}

export interface ProtectedUpstreamOptions {
  auth: StandInAuthServer;
  /** Put resource_metadata in the 401's WWW-Authenticate (default true). */
  advertise?: boolean;
  /** The resource_metadata URL the 401 names (default its own well-known metadata). */
  resourceMetadata?: string;
  /** The `resource` its own metadata names (default its URL). */
  resource?: string;
  /** The `authorization_servers` of its own metadata (default the stand-in's issuer). */
  authorizationServers?: string[];
}

/** An MCP server (tools echo and whoami) that wants a token of the stand-in authorization server. */
export class ProtectedUpstream {
  url = '';
  origin = '';
  readonly requests: UpstreamRequest[] = [];
  readonly #server: Server;

  constructor(readonly options: ProtectedUpstreamOptions) {
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    this.origin = await listen(this.#server);
    this.url = `${this.origin}/mcp`;
    return this;
  }

  close(): Promise<void> {
    return close(this.#server);
  }

  /** The tools/call requests that reached the MCP server (their token accepted). */
  calls(): UpstreamRequest[] {
    return this.requests.filter((r) => r.admitted && r.rpc === 'tools/call');
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', this.origin).pathname;
    if (req.method === 'GET' && path === '/.well-known/oauth-protected-resource/mcp') {
      const { resource = this.url, authorizationServers = [this.options.auth.issuer] } = this.options;
      return json(res, 200, {
        resource,
        authorization_servers: authorizationServers,
        bearer_methods_supported: ['header'],
      });
    }
    if (path !== '/mcp') return json(res, 404, { error: 'not_found' });
    const text = await bodyOf(req);
    const body: unknown = text === '' ? undefined : JSON.parse(text);
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const admitted = token !== undefined && this.options.auth.valid(token);
    const rpc =
      typeof body === 'object' && body !== null && 'method' in body
        ? String((body as { method: unknown }).method)
        : undefined;
    this.requests.push({
      method: req.method ?? '',
      path,
      headers: { ...req.headers },
      ...(rpc === undefined ? {} : { rpc }),
      admitted,
    });
    if (!admitted) {
      const metadata = this.options.resourceMetadata ?? `${this.origin}/.well-known/oauth-protected-resource/mcp`;
      const challenge =
        this.options.advertise === false
          ? 'Bearer'
          : `Bearer resource_metadata="${metadata}"${token === undefined ? '' : ', error="invalid_token"'}`;
      return json(res, 401, { error: 'invalid_token' }, { 'www-authenticate': challenge });
    }
    const server = new McpServer({ name: 'protected-tools', version: '1.0.0' });
    server.registerTool(
      'echo',
      { description: 'Echoes its text', inputSchema: { text: z.string() } },
      ({ text: t }) => ({ content: [{ type: 'text', text: t }] }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }
}
