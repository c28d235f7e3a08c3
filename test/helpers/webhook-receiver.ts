/** A webhook receiver on 127.0.0.1 for tests: records every request and answers `status.code`. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { JsonObject } from './json.js';

export interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: JsonObject;
}

export interface Receiver {
  url: string;
  received: Received[];
  status: { code: number };
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const status = { code: 200 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers, raw, body: JSON.parse(raw) });
      res.writeHead(status.code, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    status,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Connections still open (a held answer, a keep-alive socket) would keep close() waiting.
        server.closeAllConnections();
      }),
  };
}
