/** A webhook receiver on 127.0.0.1 for the benchmarks: answers 204 at once and counts deliveries. */
import { createServer } from 'node:http';

export interface Receiver {
  url: string;
  count(): number;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    count: () => n,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
