/**
 * What a webhook endpoint answers is read only up to 64 KiB
 * (runtime/webhooks/send.ts): a 200 MiB answer and an endless one end the
 * attempt as soon as the limit is passed (the connection is closed), the status
 * is what counts, and the receiver, honouring back-pressure, could push only a
 * few socket buffers' worth before the connection went away. Then the same
 * through the dispatcher on both stores: the attempt history records the status.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RESPONSE_READ_LIMIT, sendWebhook } from '../../../runtime/webhooks/send.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from '../helpers/app.js';

const MiB = 1024 * 1024;
const HUGE = 200 * MiB;
/** Generous: the kernel's loopback socket buffers on both sides plus Node's; far below HUGE. */
const BUFFERS_AT_MOST = 32 * MiB;
const RULES = { environment: 'test' as const, allowPrivate: false };
const CHUNK = Buffer.alloc(64 * 1024, 'x');

interface Streamer {
  url: string;
  /** Body bytes handed to sockets so far, whether a connection was closed, requests and connections seen. */
  stats: { written: number; closed: boolean; requests: number; connections: Set<unknown> };
  close(): Promise<void>;
}

/**
 * A receiver on 127.0.0.1 that answers 200 and streams `total` bytes of body
 * (Infinity: never ends; 0: headers only, then silence), writing only when the
 * socket drains, so what it writes is what the client reads plus buffers.
 */
async function startStreamer(total: number): Promise<Streamer> {
  const stats = { written: 0, closed: false, requests: 0, connections: new Set<unknown>() };
  const server: Server = createServer((req, res) => {
    stats.requests++;
    if (!stats.connections.has(req.socket)) {
      stats.connections.add(req.socket);
      req.socket.on('close', () => {
        stats.closed = true;
      });
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'text/plain',
        ...(Number.isFinite(total) && total > 0 ? { 'content-length': String(total) } : {}),
      });
      if (total === 0) {
        res.flushHeaders();
        return;
      }
      let sent = 0;
      const pump = () => {
        while (!res.destroyed && sent < total) {
          const chunk = total - sent < CHUNK.length ? CHUNK.subarray(0, total - sent) : CHUNK;
          sent += chunk.length;
          stats.written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed && sent >= total) res.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    stats,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('reading a webhook answer (sendWebhook)', () => {
  const open: Streamer[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  const streamer = async (total: number) => {
    const s = await startStreamer(total);
    open.push(s);
    return s;
  };

  it('a 200 MiB answer: the status is recorded and the body is not read past 64 KiB', async () => {
    const s = await streamer(HUGE);
    const result = await sendWebhook(s.url, Buffer.from('{}'), {}, RULES, 10_000);
    expect(result).toMatchObject({ status_code: 200, error: null });
    await expect.poll(() => s.stats.closed).toBe(true);
    expect(s.stats.written).toBeGreaterThan(RESPONSE_READ_LIMIT);
    expect(s.stats.written).toBeLessThan(BUFFERS_AT_MOST);
  });

  it('an answer that never ends: the attempt ends at the limit, not at the timeout', async () => {
    const s = await streamer(Infinity);
    const result = await sendWebhook(s.url, Buffer.from('{}'), {}, RULES, 10_000);
    expect(result).toMatchObject({ status_code: 200, error: null });
    await expect.poll(() => s.stats.closed).toBe(true);
    expect(s.stats.written).toBeLessThan(BUFFERS_AT_MOST);
  });

  it('an answer whose body never comes: the status that came in time stands at the timeout', async () => {
    const s = await streamer(0);
    const result = await sendWebhook(s.url, Buffer.from('{}'), {}, RULES, 300);
    expect(result).toMatchObject({ status_code: 200, error: null });
  });

  it('a short answer is read to its end and the connection is reused', async () => {
    const s = await streamer(1000);
    for (let i = 0; i < 3; i++)
      expect(await sendWebhook(s.url, Buffer.from('{}'), {}, RULES, 10_000)).toMatchObject({
        status_code: 200,
        error: null,
      });
    expect(s.stats.requests).toBe(3);
    expect(s.stats.connections.size).toBe(1);
    expect(s.stats.closed).toBe(false);
  });

  it('no answer at all is still a failure with an error', async () => {
    const server = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const result = await sendWebhook(`http://127.0.0.1:${port}/hooks`, Buffer.from('{}'), {}, RULES, 200);
      expect(result.status_code).toBeNull();
      expect(result.error).toMatch(/no response within/);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe.each(STORE_KINDS)('huge and endless webhook answers through the dispatcher (%s)', (kind) => {
  let rt: TestRuntime;
  const open: Streamer[] = [];
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
  });
  afterAll(async () => {
    await rt?.close();
    for (const s of open) await s.close();
  });

  it.each([
    ['a 200 MiB', HUGE],
    ['an endless', Infinity],
  ])('%s answer: the delivery succeeds and its attempt records the status', async (_name, total) => {
    const s = await startStreamer(total);
    open.push(s);
    const created = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: s.url, events: ['decision.allow'] },
    });
    expect(created.statusCode).toBe(201);
    const endpoint = json(created);
    expect(
      (
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'big-answers', action: 'orders.read' },
        })
      ).statusCode,
    ).toBe(200);
    expect(await rt.services.dispatcher.runOnce()).toBe(1);
    const [delivery] = (await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data;
    expect(delivery).toMatchObject({ status: 'succeeded', attempt: 1, status_code: 200, error: null });
    expect(delivery.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status_code: 200, error: null, next_attempt_at: null }),
    ]);
    expect(s.stats.written).toBeLessThan(BUFFERS_AT_MOST);
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${endpoint.id}` })).statusCode).toBe(200);
  });
});
