/**
 * The proxy's HTTP listener as an OAuth 2.1 protected resource (docs/mcp.md#one-gateway-for-many-agents;
 * MCP authorization
 * specification 2025-11-25; RFC 6750, RFC 9728):
 *
 * - every request to the MCP endpoint needs `Authorization: Bearer <JWT>`;
 *   none, or an invalid one, or one without the agent claim: 401 with
 *   `WWW-Authenticate: Bearer resource_metadata="<url>"` (and
 *   `error="invalid_token"` when a token was sent); a token without a
 *   required scope: 403 with `error="insufficient_scope"` and
 *   `scope="<required>"`; the issuer's keys out of reach: 503;
 * - `<url>`, the origin of the public URL + `/.well-known/oauth-protected-resource`
 *   + its path, and the same without the path, answer the Protected Resource
 *   Metadata: `resource` (the audience), `authorization_servers`,
 *   `scopes_supported`, `bearer_methods_supported: ["header"]`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Identity, RequestGate } from '../http-listen.js';
import type { AuthConfig } from './config.js';
import { TokenChecker, TokenRefusal } from './tokens.js';

export const PRM_PATH = '/.well-known/oauth-protected-resource';
const BEARER = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i;

export interface TokenGateOptions {
  config: AuthConfig;
  /** One line to the operator. */
  log: (line: string) => void;
  /** Milliseconds since the epoch (default Date.now), for the token times and the key cache. */
  now?: () => number;
  /** Least time between two key-set reads caused by an unknown kid (default 30 s). */
  cooldownMs?: number;
}

/** 503 with Retry-After and a JSON-RPC error. */
function unavailable(res: ServerResponse, message: string): void {
  if (res.headersSent) return;
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message }, id: null }));
}

/** A quoted-string of an auth-param (RFC 9110; RFC 6750 allows printable ASCII only): `"` and `\` escaped, anything else unprintable dropped. */
const quoted = (value: string) => `"${value.replace(/[^\x20-\x7E]/g, '').replace(/["\\]/g, (c) => `\\${c}`)}"`;

/**
 * Admits the listener's requests by their bearer tokens, and serves the
 * Protected Resource Metadata. Its public URL is set once the listener knows
 * its address (`bind`).
 *
 * @example
 * ```ts
 * const gate = new TokenGate({ config: auth, log: console.error });
 * const listening = await listenStreamableHttp({ host: '0.0.0.0', port: 8090, gate, openSession, log: console.error });
 * gate.bind(new URL('https://tools.example.com/mcp'));
 * ```
 */
export class TokenGate implements RequestGate {
  readonly checker: TokenChecker;
  readonly #options: TokenGateOptions;
  #publicUrl: URL | undefined;

  constructor(options: TokenGateOptions) {
    this.#options = options;
    this.checker = new TokenChecker({
      config: options.config,
      audience: () => this.resource,
      ...(options.now ? { now: options.now } : {}),
      ...(options.cooldownMs === undefined ? {} : { cooldownMs: options.cooldownMs }),
    });
  }

  /** Sets the MCP endpoint as clients reach it (`--public-url`, else the listener's URL). */
  bind(publicUrl: URL): void {
    this.#publicUrl = new URL(publicUrl.href);
  }

  #bound(): URL {
    if (!this.#publicUrl) throw new Error('TokenGate: bind(publicUrl) before serving requests');
    return this.#publicUrl;
  }

  /** The resource tokens must be issued for: the configured audience, else the public URL. */
  get resource(): string {
    return this.#options.config.audience ?? this.#bound().href;
  }

  /** The Protected Resource Metadata's URL (RFC 9728's path-inserted form). */
  get metadataUrl(): string {
    const url = this.#bound();
    const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
    return `${url.origin}${PRM_PATH}${path}`;
  }

  /** The Protected Resource Metadata document. */
  metadata(): Record<string, unknown> {
    return {
      resource: this.resource,
      authorization_servers: [this.#options.config.issuer],
      scopes_supported: this.#options.config.scopes,
      bearer_methods_supported: ['header'],
    };
  }

  /**
   * Answers the Protected Resource Metadata at its well-known paths (the
   * public URL's path, the listener's own MCP path, none). True when it did.
   */
  serve(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.#publicUrl) return false;
    const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/\/+$/, '');
    const publicPath = this.#bound().pathname.replace(/\/+$/, '');
    if (path !== PRM_PATH && path !== `${PRM_PATH}${publicPath}` && path !== `${PRM_PATH}/mcp`) return false;
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, OPTIONS',
      'access-control-allow-headers': '*',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
    } else if (req.method === 'GET' || req.method === 'HEAD') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300', ...cors });
      res.end(req.method === 'HEAD' ? undefined : JSON.stringify(this.metadata()));
    } else {
      res.writeHead(405, { allow: 'GET, HEAD, OPTIONS' }).end();
    }
    return true;
  }

  async admit(req: IncomingMessage, res: ServerResponse): Promise<Identity | undefined> {
    if (!this.#publicUrl) {
      // Between the listener's start and bind(): its public URL, hence the audience, is not known yet.
      unavailable(res, 'the gateway is starting; try again');
      return undefined;
    }
    const header = req.headers.authorization;
    const bearer = header === undefined ? null : BEARER.exec(header);
    if (header === undefined || !/^Bearer(\s|$)/i.test(header)) {
      this.#refuse(res, 401, [], 'this MCP endpoint needs an OAuth bearer token (Authorization: Bearer <token>)');
      return undefined;
    }
    if (!bearer) {
      this.#refuse(
        res,
        401,
        [
          ['error', 'invalid_token'],
          ['error_description', 'the Authorization header is not "Bearer <token>"'],
        ],
        'invalid bearer token',
      );
      return undefined;
    }
    try {
      const { identity, claims } = await this.checker.check(bearer[1]!);
      return { ...identity, claims };
    } catch (error) {
      if (!(error instanceof TokenRefusal)) throw error;
      if (error.kind === 'unavailable') {
        this.#options.log(`cannot check a token: ${error.message}`);
        unavailable(res, "the authorization server's keys cannot be read now; try again later");
        return undefined;
      }
      if (error.kind === 'insufficient_scope') {
        this.#refuse(
          res,
          403,
          [
            ['error', 'insufficient_scope'],
            ['scope', this.#options.config.scopes.join(' ')],
            ['error_description', error.message],
          ],
          error.message,
        );
      } else {
        this.#refuse(
          res,
          401,
          [
            ['error', 'invalid_token'],
            ['error_description', error.message],
          ],
          error.message,
        );
      }
      return undefined;
    }
  }

  /** A 401 or 403 with the Bearer challenge and a JSON-RPC error body. */
  #refuse(res: ServerResponse, status: 401 | 403, params: Array<[string, string]>, message: string): void {
    const scopes = this.#options.config.scopes;
    // The 401 also names the scopes to ask for (MCP authorization: scope selection).
    const all: Array<[string, string]> = [['resource_metadata', this.metadataUrl], ...params];
    if (status === 401 && scopes.length > 0) all.push(['scope', scopes.join(' ')]);
    if (res.headersSent) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'www-authenticate': `Bearer ${all.map(([k, v]) => `${k}=${quoted(v)}`).join(', ')}`,
    });
    res.end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32600, message: `${status === 401 ? 'Unauthorized' : 'Forbidden'}: ${message}` },
        id: null,
      }),
    );
  }
}
