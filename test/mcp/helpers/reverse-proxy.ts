/**
 * An HTTP reverse proxy on 127.0.0.1 for the gateway's `--public-url` tests,
 * doing what a front server (nginx, a load balancer) in front of
 * `authz mcp-proxy --listen` does: it serves the MCP endpoint under a path of
 * its own (`prefix` + `/mcp`, e.g. `/tools/mcp`) and forwards it to the
 * gateway's `/mcp`, forwards `/.well-known/...` as it is, rewrites `Host` to
 * the inner address (nginx's default `proxy_set_header Host $proxy_host`),
 * adds `X-Forwarded-*`, and streams the answers (SSE included) back. Anything
 * else is 404 from the proxy itself. It records the paths it forwarded.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';

export interface ReverseProxy {
  /** `http://localhost:<port>`: the origin clients reach. */
  readonly origin: string;
  /** Paths forwarded to the gateway, as the gateway received them. */
  readonly forwarded: string[];
  close(): Promise<void>;
}

/**
 * Starts the reverse proxy in front of `http://127.0.0.1:<innerPort>`.
 *
 * @param prefix - the path the MCP endpoint is published under, before `/mcp` (e.g. `/tools`).
 */
export async function startReverseProxy(innerPort: number, prefix: string): Promise<ReverseProxy> {
  const forwarded: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://front');
    let path: string | undefined;
    if (url.pathname === `${prefix}/mcp`) path = `/mcp${url.search}`;
    else if (url.pathname.startsWith('/.well-known/')) path = `${url.pathname}${url.search}`;
    if (path === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found at the front');
      return;
    }
    forwarded.push(path);
    const headers = {
      ...req.headers,
      host: `127.0.0.1:${innerPort}`,
      'x-forwarded-host': req.headers.host ?? '',
      'x-forwarded-proto': 'http',
    };
    const inner = request({ host: '127.0.0.1', port: innerPort, method: req.method, path, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    inner.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('bad gateway');
    });
    res.on('close', () => inner.destroy());
    req.pipe(inner);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://localhost:${port}`,
    forwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
