/**
 * `authz mcp-proxy --listen HOST:PORT`: the proxy served over MCP Streamable
 * HTTP at `http://HOST:PORT/mcp`, one MCP session (and one proxy server) per
 * client, on the SDK's StreamableHTTPServerTransport. Bound to a loopback
 * address, it answers only requests whose Host (and Origin, when sent) is a
 * loopback name, so a web page cannot reach it through DNS rebinding.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export const MCP_PATH = '/mcp';
/** Largest request body read (4 MiB). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export interface ListenOptions {
  host: string;
  port: number;
  /** A new MCP server for each session. */
  createServer: () => Server;
  log: (line: string) => void;
}

export interface Listening {
  /** `http://HOST:PORT/mcp` with the port actually bound. */
  url: string;
  /** Bound to a loopback address (only this machine reaches it). */
  loopback: boolean;
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

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
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
  return hostHeader.startsWith('[') ? hostHeader.slice(0, hostHeader.indexOf(']') + 1) : hostHeader.split(':')[0]!;
}

/** On a loopback address: Host (and Origin, when sent) must name loopback too. */
function allowedOrigin(req: IncomingMessage, loopback: boolean): boolean {
  if (!loopback) return true;
  if (!LOOPBACK_NAMES.has(hostnameOf(req.headers.host ?? ''))) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return LOOPBACK_NAMES.has(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/**
 * Starts the HTTP listener.
 *
 * @example
 * ```ts
 * const listening = await listenStreamableHttp({ host: '127.0.0.1', port: 0, createServer: () => proxy.createServer(), log: console.error });
 * console.error(`listening on ${listening.url}`);
 * ```
 */
export async function listenStreamableHttp(options: ListenOptions): Promise<Listening> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  const loopback = LOOPBACK_NAMES.has(options.host) || options.host.startsWith('127.');

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://x').pathname !== MCP_PATH) return jsonRpcError(res, 404, -32601, `not found: the MCP endpoint is ${MCP_PATH}`);
    if (!allowedOrigin(req, loopback)) return jsonRpcError(res, 403, -32600, 'forbidden: Host and Origin must be loopback names');
    const header = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    const session = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (req.method === 'POST') {
      const body = await readJson(req, res);
      if (body === undefined) return;
      if (session) return session.transport.handleRequest(req, res, body);
      if (sessionId !== undefined) return jsonRpcError(res, 404, -32001, 'Session not found');
      if (!isInitializeRequest(body)) return jsonRpcError(res, 400, -32000, 'Bad Request: no valid session id, and not an initialize request');
      const server = options.createServer();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, { transport, server }),
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      return transport.handleRequest(req, res, body);
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (!session) return jsonRpcError(res, sessionId === undefined ? 400 : 404, -32001, sessionId === undefined ? 'Missing session id' : 'Session not found');
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
  return {
    url: `http://${host}:${port}${MCP_PATH}`,
    loopback,
    async close() {
      for (const { transport, server } of [...sessions.values()]) {
        await transport.close().catch(() => undefined);
        await server.close().catch(() => undefined);
      }
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
