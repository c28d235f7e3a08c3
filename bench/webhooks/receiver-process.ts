/**
 * The webhook bench's receiver, in its own process (so its CPU is not the
 * dispatcher's): answers 200 at once, counts deliveries by the bench batch
 * named in the event's data (`data.bench`), and the lag from the event's
 * `created_at` to arrival. Prints `{ "port" }` when listening; `GET /stats`
 * answers `{ [batch]: { count, first, last, lags_ms: [p50, p99, max] } }`.
 */
import { createServer } from 'node:http';

interface Batch {
  count: number;
  first: number;
  last: number;
  lags: number[];
}

const batches = new Map<string, Batch>();

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    const out: Record<string, unknown> = {};
    for (const [name, b] of batches) {
      const lags = [...b.lags].sort((x, y) => x - y);
      out[name] = {
        count: b.count,
        first: b.first,
        last: b.last,
        lags_ms: [quantile(lags, 0.5), quantile(lags, 0.99), lags[lags.length - 1] ?? NaN],
      };
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      created_at: string;
      data?: { bench?: string };
    };
    const name = event.data?.bench;
    if (name) {
      let b = batches.get(name);
      if (!b) batches.set(name, (b = { count: 0, first: now, last: now, lags: [] }));
      b.count++;
      b.last = now;
      b.lags.push(now - Date.parse(event.created_at));
    }
    res.writeHead(200).end();
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
process.once('SIGTERM', () => process.exit(0));
