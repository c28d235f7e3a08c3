/**
 * An HTTP forwarder in front of a real service that can break the next
 * exchanges in the ways networks do, for the client library's tests:
 *
 * - `dropResponses(n)`: the next n requests reach the service and are answered
 *   in full (the service has committed), then the client's connection is
 *   destroyed before any of the answer is passed on.
 * - `holdResponses(n)`: the same, but the answer is held back until the client
 *   gives up (its connection closes).
 * - `failRequests(n, status, body)`: the next n requests never reach the
 *   service; the proxy answers them itself (a gateway's 502 page, say).
 *
 *   const proxy = await startFaultProxy(servicePort);
 *   proxy.dropResponses(1);
 *   await client.decide(...);   // through proxy.url: the first answer is lost, the retry gets one
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';

export interface SeenRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  /** What the proxy did with it. */
  fate: 'forwarded' | 'dropped' | 'held' | 'failed';
}

export interface FaultProxy {
  readonly url: string;
  /** Every request in arrival order. */
  readonly seen: SeenRequest[];
  dropResponses(n: number): void;
  holdResponses(n: number): void;
  failRequests(n: number, status: number, body: string, contentType?: string): void;
  close(): Promise<void>;
}

const readAll = (stream: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });

export async function startFaultProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
  let drops = 0;
  let holds = 0;
  let fails: { n: number; status: number; body: string; contentType: string } = {
    n: 0,
    status: 502,
    body: '',
    contentType: 'text/html',
  };
  const seen: SeenRequest[] = [];

  const server: Server = createServer((req, res) => {
    const entry: SeenRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      idempotencyKey: typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined,
      fate: 'forwarded',
    };
    seen.push(entry);
    if (fails.n > 0) {
      fails.n--;
      entry.fate = 'failed';
      req.resume();
      res.writeHead(fails.status, { 'content-type': fails.contentType, connection: 'close' }).end(fails.body);
      return;
    }
    const fate = drops > 0 ? 'dropped' : holds > 0 ? 'held' : 'forwarded';
    if (fate === 'dropped') drops--;
    if (fate === 'held') holds--;
    entry.fate = fate;
    const upstream = httpRequest(
      { host: targetHost, port: targetPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (fate === 'forwarded') {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        // The whole answer is read first: the service has finished the request.
        void readAll(answer).then(() => {
          if (fate === 'dropped') req.socket.destroy();
          // held: nothing is sent; the client's own time limit ends the exchange.
        });
      },
    );
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;

  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    dropResponses(n) {
      drops = n;
    },
    holdResponses(n) {
      holds = n;
    },
    failRequests(n, status, body, contentType = 'text/html') {
      fails = { n, status, body, contentType };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
