/** The example webhook receiver (examples/webhook-receiver), over real HTTP on 127.0.0.1. */
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buildReceiver,
  type WebhookEnvelope,
  type WebhookReceiverOptions,
} from '../../examples/webhook-receiver/server.js';

const SECRET = 'whsec_tR9pQm3xLk2VwJ8sYbN4cE7hA1dF6gZ0uIoP5qRsT2w';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function start(
  options: Partial<WebhookReceiverOptions> = {},
): Promise<{ url: string; events: WebhookEnvelope[] }> {
  const events: WebhookEnvelope[] = [];
  app = await buildReceiver({ secret: SECRET, onEvent: (e) => void events.push(e), ...options });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/webhooks`, events };
}

const sign = (body: string | Buffer, secret = SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

function envelope(id = 'evt_01JABCDEF', type = 'decision.deny'): WebhookEnvelope {
  return {
    id,
    object: 'event',
    type,
    created_at: '2025-06-01T12:00:00.123Z',
    account_id: 'acc_default',
    livemode: false,
    data: { decision: { id: 'dec_1', effect: 'deny', reason: 'policy.matched', agent_id: 'support-bot-1' } },
  };
}

async function deliver(
  url: string,
  body: string | Buffer,
  signature: string | null,
  attempt = 1,
  contentType = 'application/json',
) {
  const headers: Record<string, string> = {
    'content-type': contentType,
    'x-service-delivery-attempt': String(attempt),
  };
  if (signature !== null) headers['x-service-signature'] = signature;
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('webhook receiver', () => {
  it('handles a correctly signed event once, and answers a repeat as a duplicate', async () => {
    const { url, events } = await start();
    const body = JSON.stringify(envelope());

    const first = await deliver(url, body, sign(body));
    expect(first).toEqual({ status: 200, body: { received: true } });
    expect(events).toEqual([envelope()]);

    const again = await deliver(url, body, sign(body), 2);
    expect(again).toEqual({ status: 200, body: { received: true, duplicate: true } });
    expect(events).toHaveLength(1);

    // Another event is handled; the duplicate check is on the envelope id.
    const other = JSON.stringify(envelope('evt_01JOTHER', 'budget.exceeded'));
    expect((await deliver(url, other, sign(other))).status).toBe(200);
    expect(events.map((e) => e.id)).toEqual(['evt_01JABCDEF', 'evt_01JOTHER']);
  });

  it('verifies over the raw bytes, with a charset parameter and non-ASCII text', async () => {
    const { url, events } = await start();
    const e = { ...envelope('evt_utf8'), data: { note: 'café ☕ 𝄞' } };
    const body = Buffer.from(`{ "id":"evt_utf8" , ${JSON.stringify(e).slice(1)}`, 'utf8'); // unusual spacing, duplicate key first
    const result = await deliver(url, body, sign(body), 1, 'application/json; charset=utf-8');
    expect(result).toEqual({ status: 200, body: { received: true } });
    expect(events[0]?.data).toEqual({ note: 'café ☕ 𝄞' });
  });

  it('answers 401 to a bad, missing or other-secret signature, and handles nothing', async () => {
    const { url, events } = await start();
    const body = JSON.stringify(envelope());
    const invalid = { status: 401, body: { error: 'invalid signature' } };
    expect(await deliver(url, body, null)).toEqual(invalid);
    expect(await deliver(url, body, '')).toEqual(invalid);
    expect(await deliver(url, body, `sha256=${'0'.repeat(64)}`)).toEqual(invalid);
    expect(await deliver(url, body, sign(body, 'whsec_another'))).toEqual(invalid);
    expect(await deliver(url, body, `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`)).toEqual(invalid);
    expect(await deliver(url, body, sign(body).slice(0, -2))).toEqual(invalid);
    const tampered = JSON.stringify({ ...envelope(), type: 'decision.allow' });
    expect(await deliver(url, tampered, sign(body))).toEqual(invalid);
    expect(events).toEqual([]);
  });

  it('answers 401 to the same JSON re-serialised with other whitespace under the original signature', async () => {
    const { url, events } = await start();
    const body = JSON.stringify(envelope());
    const reserialised = JSON.stringify(JSON.parse(body), null, 2);
    expect(JSON.parse(reserialised)).toEqual(JSON.parse(body));
    expect(await deliver(url, reserialised, sign(body))).toEqual({ status: 401, body: { error: 'invalid signature' } });
    expect(events).toEqual([]);
    // The body as signed still goes through (the id was not remembered by the refused attempt).
    expect(await deliver(url, body, sign(body))).toEqual({ status: 200, body: { received: true } });
  });

  it('answers 400 to a correctly signed body that is not JSON, or not an envelope', async () => {
    const { url, events } = await start();
    for (const body of [
      '{"id":"evt_1",',
      'not json',
      '',
      '[]',
      'null',
      '"evt_1"',
      JSON.stringify({ ...envelope(), id: 'dec_1' }),
      JSON.stringify({ ...envelope(), object: 'decision' }),
      JSON.stringify({ ...envelope(), data: null }),
      JSON.stringify({ ...envelope(), livemode: 'false' }),
      JSON.stringify((({ type: _type, ...rest }) => rest)(envelope())),
    ]) {
      const result = await deliver(url, body, sign(body));
      expect(result.status, body).toBe(400);
      expect(result.body.error, body).toEqual(expect.any(String));
    }
    expect(events).toEqual([]);
  });

  it('answers 415 to a body that is not application/json', async () => {
    const { url, events } = await start();
    const body = JSON.stringify(envelope());
    expect((await deliver(url, body, sign(body), 1, 'text/plain')).status).toBe(415);
    expect(events).toEqual([]);
  });

  it('answers 500 when the handler fails, and handles the retry', async () => {
    let calls = 0;
    const { url } = await start({
      onEvent: () => {
        calls++;
        if (calls === 1) throw new Error('database down');
      },
    });
    const body = JSON.stringify(envelope());
    expect(await deliver(url, body, sign(body))).toEqual({
      status: 500,
      body: { error: 'the event could not be handled' },
    });
    expect(await deliver(url, body, sign(body), 2)).toEqual({ status: 200, body: { received: true } });
    expect(await deliver(url, body, sign(body), 3)).toEqual({ status: 200, body: { received: true, duplicate: true } });
    expect(calls).toBe(2);
  });

  it('remembers a bounded number of ids, forgetting the oldest', async () => {
    const { url, events } = await start({ rememberIds: 2 });
    const send = (id: string) => {
      const body = JSON.stringify(envelope(id));
      return deliver(url, body, sign(body));
    };
    for (const id of ['evt_a', 'evt_b', 'evt_c']) expect((await send(id)).body).toEqual({ received: true });
    expect((await send('evt_c')).body).toEqual({ received: true, duplicate: true });
    expect((await send('evt_b')).body).toEqual({ received: true, duplicate: true });
    expect((await send('evt_a')).body).toEqual({ received: true }); // forgotten
    expect(events.map((e) => e.id)).toEqual(['evt_a', 'evt_b', 'evt_c', 'evt_a']);
  });

  it('refuses to start without a secret', async () => {
    await expect(buildReceiver({ secret: '' })).rejects.toThrow(TypeError);
  });
});

describe('webhook receiver with standardWebhooks (endpoints registered with "standard_webhooks": true)', () => {
  const STANDARD_SECRET = `whsec_${Buffer.alloc(32, 0x5a).toString('base64')}`;
  const standardHeaders = (body: string, id: string, timestamp: number) => ({
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${createHmac('sha256', Buffer.alloc(32, 0x5a)).update(`${id}.${timestamp}.${body}`).digest('base64')}`,
  });
  async function post(url: string, body: string, headers: Record<string, string>) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('accepts a fresh delivery signed both ways; refuses an old one (a replay), a missing header or a bad signature', async () => {
    const { url, events } = await start({ secret: STANDARD_SECRET, standardWebhooks: true });
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify(envelope('evt_std'));
    const both = (b: string, id: string, ts: number) => ({
      'x-service-signature': sign(b, STANDARD_SECRET),
      ...standardHeaders(b, id, ts),
    });
    const invalid = { status: 401, body: { error: 'invalid signature' } };

    expect(await post(url, body, both(body, 'evt_std', now - 600))).toEqual(invalid); // captured 10 minutes ago
    expect(await post(url, body, { 'x-service-signature': sign(body, STANDARD_SECRET) })).toEqual(invalid);
    expect(await post(url, body, { ...both(body, 'evt_std', now), 'x-service-signature': sign(body) })).toEqual(
      invalid,
    );
    expect(await post(url, body, { ...both(body, 'evt_std', now), 'webhook-id': 'evt_other' })).toEqual(invalid);
    expect(events).toEqual([]);
    expect(await post(url, body, both(body, 'evt_std', now))).toEqual({ status: 200, body: { received: true } });
    expect(events.map((e) => e.id)).toEqual(['evt_std']);
  });

  it('honours toleranceSeconds, and refuses to start with a secret that is not whsec_ + base64', async () => {
    const { url } = await start({ secret: STANDARD_SECRET, standardWebhooks: true, toleranceSeconds: 3600 });
    const body = JSON.stringify(envelope('evt_late'));
    const ts = Math.floor(Date.now() / 1000) - 600;
    expect(
      (
        await post(url, body, {
          'x-service-signature': sign(body, STANDARD_SECRET),
          ...standardHeaders(body, 'evt_late', ts),
        })
      ).status,
    ).toBe(200);
    await expect(buildReceiver({ secret: SECRET, standardWebhooks: true })).rejects.toThrow(TypeError);
  });
});
