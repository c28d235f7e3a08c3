/**
 * `authz mcp-proxy --listen HOST:PORT`: the proxy served over MCP Streamable
 * HTTP at `http://HOST:PORT/mcp`, one MCP session (and one relayed upstream
 * session) per client, on the SDK's StreamableHTTPServerTransport (docs/mcp.md#one-gateway-for-many-agents,
 * docs/mcp.md#command-line):
 *
 * - a session without a request for `idleSeconds` (and no open stream) is
 *   ended, its upstream session with it; at most `maxSessions` at once (more:
 *   HTTP 503 with a JSON-RPC error), and with a gate at most
 *   `maxSessionsPerIdentity` of them for one identity (agent and user; more:
 *   HTTP 429), so one token cannot take every slot;
 * - without a gate (tokens, issue 31's `auth:`) the listener answers 403 to a
 *   Host or Origin that is neither a loopback name nor the host of the public
 *   URL, so a web page cannot reach it through DNS rebinding.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { isLoopback, LOOPBACK_NAMES } from './loopback.js';
import type { Relay, RelayEnd } from './relay.js';

export { isLoopback };

export const MCP_PATH = '/mcp';
/** Largest request body read (4 MiB). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
export const DEFAULT_SESSION_IDLE_SECONDS = 600;
export const DEFAULT_MAX_SESSIONS = 1000;
/** The share of `maxSessions` one identity may hold by default. */
export const DEFAULT_IDENTITY_SHARE = 0.1;

/**
 * The default most sessions of one identity: a tenth of the cap, at least one.
 *
 * @example
 * ```ts
 * console.log(defaultMaxSessionsPerIdentity(1000), defaultMaxSessionsPerIdentity(4)); // => 100 1
 * ```
 */
export function defaultMaxSessionsPerIdentity(maxSessions: number): number {
  return Math.max(1, Math.floor(maxSessions * DEFAULT_IDENTITY_SHARE));
}

/** Who an HTTP request speaks for, as a gate established it. */
export interface Identity {
  agentId: string;
  onBehalfOf?: string;
  /** The verified claims of the token that established it (`token` in declared mappings). */
  claims?: Record<string, unknown>;
}

/**
 * What admits an HTTP request when the listener is not left to loopback
 * clients (the seam for `auth:`, tokens): it answers the request itself (401,
 * 403) and returns undefined, or returns the identity the request carries. A
 * session stays bound to the identity that opened it.
 */
export interface RequestGate {
  admit(req: IncomingMessage, res: ServerResponse): Promise<Identity | undefined>;
  /** Answers a request outside the MCP endpoint itself (e.g. its OAuth metadata); true when it did. */
  serve?(req: IncomingMessage, res: ServerResponse): boolean;
}

export interface ListenOptions {
  host: string;
  port: number;
  /**
   * Joins a new session's transport to an upstream session (the relay calls
   * `onEnd` when either side closes). `identity` is the gate's, when there is one.
   */
  openSession: (
    transport: StreamableHTTPServerTransport,
    mcpSessionId: string,
    onEnd: (why: RelayEnd) => void,
    identity?: Identity,
  ) => Promise<Relay>;
  log: (line: string) => void;
  /** The MCP endpoint as clients reach it; default `http://HOST:PORT/mcp`. Its host is accepted in Host and Origin. */
  publicUrl?: URL;
  /** Seconds without a request after which a session ends (default 600). */
  idleSeconds?: number;
  /** Most sessions at once (default 1000). */
  maxSessions?: number;
  /** Most sessions of one identity at once, with a gate (default: a tenth of `maxSessions`). */
  maxSessionsPerIdentity?: number;
  /** Admits requests by their credentials; without one, Host and Origin must be loopback names or the public URL's host. */
  gate?: RequestGate;
}

export interface Listening {
  /** `http://HOST:PORT/mcp` with the port actually bound (the public URL may differ). */
  url: string;
  /** Bound to a loopback address (only this machine reaches it). */
  loopback: boolean;
  /** Sessions open now. */
  sessionCount(): number;
  close(): Promise<void>;
}

/**
 * Parses `HOST:PORT` (`[::1]:8000` for IPv6).
 *
 * @example
 * ```ts
 * console.log(parseListen('127.0.0.1:0')); // => { host: '127.0.0.1', port: 0 }
 * ```
 */
export function parseListen(value: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  if (!m) return null;
  const port = Number(m[2]);
  if (port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

function jsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The request's body as JSON; `undefined` after answering an error itself. */
async function readJson(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      jsonRpcError(res, 413, -32600, `request body over ${MAX_BODY_BYTES} bytes`);
      return undefined;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    jsonRpcError(res, 400, -32700, 'Parse error: the body is not JSON');
    return undefined;
  }
}

function hostnameOf(hostHeader: string): string {
  const name = hostHeader.startsWith('[')
    ? hostHeader.slice(0, hostHeader.indexOf(']') + 1)
    : hostHeader.split(':')[0]!;
  return name.toLowerCase();
}

/** Host (and Origin, when sent) must name loopback or the public URL's host. */
function allowedOrigin(req: IncomingMessage, publicHost: string): boolean {
  const allowed = (name: string) => LOOPBACK_NAMES.has(name) || name === publicHost;
  if (!allowed(hostnameOf(req.headers.host ?? ''))) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return allowed(new URL(origin).hostname.toLowerCase());
  } catch {
    return false;
  }
}

/** The key of an identity's sessions: its agent and the user it acts for. */
const identityKey = (identity: Identity): string => JSON.stringify([identity.agentId, identity.onBehalfOf ?? null]);

/** One HTTP session: its transport, its relay, and when it was last used. */
interface Session {
  transport: StreamableHTTPServerTransport;
  relay?: Relay;
  identity?: Identity;
  /** Requests (and streams) of the session still open. */
  open: number;
  lastSeen: number;
}

/**
 * Starts the HTTP listener.
 *
 * @example
 * ```ts
 * const listening = await listenStreamableHttp({
 *   host: '127.0.0.1', port: 0, log: console.error,
 *   openSession: (transport, id, onEnd) => proxy.openSession(transport, { agentId: 'bot', sessionId: `mcp-${id}` }, onEnd),
 * });
 * console.error(`listening on ${listening.url}`);
 * ```
 */
export async function listenStreamableHttp(options: ListenOptions): Promise<Listening> {
  const sessions = new Map<string, Session>();
  const idleMs = (options.idleSeconds ?? DEFAULT_SESSION_IDLE_SECONDS) * 1000;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const maxPerIdentity = options.maxSessionsPerIdentity ?? defaultMaxSessionsPerIdentity(maxSessions);
  /** Open sessions by identity key (with a gate). */
  const perIdentity = new Map<string, number>();
  let publicHost = '';

  function add(id: string, session: Session): void {
    sessions.set(id, session);
    if (session.identity)
      perIdentity.set(identityKey(session.identity), (perIdentity.get(identityKey(session.identity)) ?? 0) + 1);
  }
  /** Forgets a session (once, whichever side ends it first). */
  function remove(id: string): void {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    if (session.identity) {
      const key = identityKey(session.identity);
      const left = (perIdentity.get(key) ?? 1) - 1;
      if (left > 0) perIdentity.set(key, left);
      else perIdentity.delete(key);
    }
  }

  /** Ends a session: its relay closes both sides (the upstream session or process too). */
  async function end(id: string, session: Session): Promise<void> {
    remove(id);
    if (session.relay) await session.relay.close();
    else await session.transport.close().catch(() => undefined);
  }

  /** Counts a request as the session's use until its response (or stream) closes. */
  function using(session: Session, res: ServerResponse): void {
    session.open++;
    session.lastSeen = Date.now();
    res.once('close', () => {
      session.open--;
      session.lastSeen = Date.now();
    });
  }

  async function open(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    identity: Identity | undefined,
  ): Promise<void> {
    if (sessions.size >= maxSessions) {
      return jsonRpcError(res, 503, -32000, `Too many MCP sessions: at most ${maxSessions} at once; try again later`, {
        'retry-after': '1',
      });
    }
    if (identity && (perIdentity.get(identityKey(identity)) ?? 0) >= maxPerIdentity) {
      const who = `agent ${identity.agentId}${identity.onBehalfOf === undefined ? '' : ` for user ${identity.onBehalfOf}`}`;
      return jsonRpcError(
        res,
        429,
        -32000,
        `Too many MCP sessions for ${who}: at most ${maxPerIdentity} at once; end one (DELETE ${MCP_PATH}) or wait until one is idle for long enough to end`,
        {
          'retry-after': '1',
        },
      );
    }
    const id = randomUUID();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => id });
    const session: Session = { transport, open: 0, lastSeen: Date.now(), ...(identity ? { identity } : {}) };
    add(id, session);
    try {
      session.relay = await options.openSession(transport, id, () => remove(id), identity);
    } catch (error) {
      remove(id);
      options.log(`cannot open an upstream session: ${(error as Error).message}`);
      return jsonRpcError(
        res,
        502,
        -32603,
        `the upstream MCP server could not be reached: ${(error as Error).message}`,
      );
    }
    using(session, res);
    await transport.handleRequest(req, res, body);
    // The transport refused the initialize (e.g. its protocol version): no session came of it.
    if (transport.sessionId === undefined) await end(id, session);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://x').pathname !== MCP_PATH) {
      if (options.gate?.serve?.(req, res)) return;
      return jsonRpcError(res, 404, -32601, `not found: the MCP endpoint is ${MCP_PATH}`);
    }
    let identity: Identity | undefined;
    if (options.gate) {
      identity = await options.gate.admit(req, res);
      if (!identity) return;
    } else if (!allowedOrigin(req, publicHost)) {
      return jsonRpcError(res, 403, -32600, `forbidden: Host and Origin must be loopback names or ${publicHost}`);
    }
    const header = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    const session = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (
      session?.identity &&
      (session.identity.agentId !== identity?.agentId || session.identity.onBehalfOf !== identity?.onBehalfOf)
    ) {
      return jsonRpcError(res, 403, -32600, 'forbidden: this session belongs to another identity');
    }
    if (req.method === 'POST') {
      const body = await readJson(req, res);
      if (body === undefined) return;
      if (session) {
        using(session, res);
        return session.transport.handleRequest(req, res, body);
      }
      if (sessionId !== undefined) return jsonRpcError(res, 404, -32001, 'Session not found');
      if (!isInitializeRequest(body))
        return jsonRpcError(res, 400, -32000, 'Bad Request: no valid session id, and not an initialize request');
      return open(req, res, body, identity);
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (!session)
        return jsonRpcError(
          res,
          sessionId === undefined ? 400 : 404,
          -32001,
          sessionId === undefined ? 'Missing session id' : 'Session not found',
        );
      using(session, res);
      return session.transport.handleRequest(req, res);
    }
    res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      options.log(`error serving ${req.method} ${req.url}: ${(error as Error).message}`);
      jsonRpcError(res, 500, -32603, 'Internal error');
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}${MCP_PATH}`;
  publicHost = new URL(options.publicUrl ?? url).hostname.toLowerCase();

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions)
        if (session.open === 0 && session.relay && now - session.lastSeen >= idleMs) void end(id, session);
    },
    Math.max(200, Math.min(idleMs / 4, 10_000)),
  );
  sweep.unref();

  return {
    url,
    loopback: isLoopback(options.host),
    sessionCount: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await Promise.allSettled([...sessions].map(([id, session]) => end(id, session)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
