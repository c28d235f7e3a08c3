/**
 * Webhook receivers can check for replays (docs/webhooks-and-events.md#standard-webhooks-replay-protection): an endpoint
 * registered with `"standard_webhooks": true` gets, beside the unchanged
 * `X-Service-Signature`, the Standard Webhooks headers, verified here by the
 * `standardwebhooks` package itself (which refuses a delivery more than 5
 * minutes old) and by the project's helpers. On both stores, over real HTTP to
 * a receiver on 127.0.0.1. The service clock is set to the real time, because
 * the package compares `webhook-timestamp` with `Date.now()`.
 */
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signStandardWebhook, verifyStandardWebhook, verifyWebhookSignature } from '../../../webhook-receiver/index.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { startReceiver, type Received, type Receiver } from '../../helpers/webhook-receiver.js';
import { json, startRuntime, type TestRuntime } from '../helpers/app.js';
import { decide as kitDecide } from '../../helpers/kit.js';

/** The package's verification: the parsed body, or the error it throws. */
function packageVerdict(secret: string, x: Received): unknown {
  try {
    return new Webhook(secret).verify(x.raw, x.headers as Record<string, string>);
  } catch (error) {
    return error;
  }
}

describe.each(STORE_KINDS)('Standard Webhooks endpoints (%s)', (kind) => {
  let rt: TestRuntime;
  let receiver: Receiver;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    receiver = await startReceiver();
    await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
  });
  afterAll(async () => {
    await rt?.close();
    await receiver?.close();
  });
  beforeEach(async () => {
    for (const e of (await rt.getOk('/v1/webhooks?limit=100')).data)
      await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${e.id}` });
    receiver.received.length = 0;
    rt.clock.set(Date.now());
  });

  const register = (body: Record<string, unknown>) =>
    rt.call(rt.testKey, { method: 'POST', url: '/v1/webhooks', payload: body });
  const change = (id: string, body: Record<string, unknown>) =>
    rt.call(rt.testKey, { method: 'PUT', url: `/v1/webhooks/${id}`, payload: body });
  const decide = () => kitDecide(rt, { agent_id: 'sw-bot', action: 'orders.read' });
  /** One decision, delivered: what the receiver got. */
  const deliverOne = async (): Promise<Received> => {
    receiver.received.length = 0;
    await decide();
    expect(await rt.services.dispatcher.runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    return receiver.received[0]!;
  };

  it('opt-in at registration: the resource says so, and deliveries verify with the standardwebhooks package', async () => {
    const r = await register({ url: receiver.url, events: ['decision.allow'], standard_webhooks: true });
    expect(r.statusCode, r.body).toBe(201);
    const endpoint = json(r);
    expect(endpoint.standard_webhooks).toBe(true);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await rt.getOk(`/v1/webhooks/${endpoint.id}`)).standard_webhooks).toBe(true);

    const x = await deliverOne();
    // The X-Service-Signature of docs/webhooks-and-events.md#delivery, unchanged: hex HMAC of the body keyed with the whole secret.
    expect(x.headers['x-service-signature']).toBe(
      `sha256=${createHmac('sha256', endpoint.secret).update(x.raw).digest('hex')}`,
    );
    expect(verifyWebhookSignature(x.raw, x.headers['x-service-signature'], endpoint.secret)).toBe(true);
    // The Standard Webhooks headers.
    expect(x.headers['webhook-id']).toBe(x.body.id);
    expect(x.headers['webhook-id']).toBe(x.headers['x-service-event-id']);
    expect(x.headers['webhook-timestamp']).toBe(String(Math.floor(rt.clock.now() / 1000)));
    expect(x.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(packageVerdict(endpoint.secret, x)).toEqual(x.body);
    expect(verifyStandardWebhook(x.raw, x.headers, endpoint.secret)).toBe(true);
    // Another secret, another body: refused by both.
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(packageVerdict(other, x)).toBeInstanceOf(Error);
    expect(verifyStandardWebhook(x.raw, x.headers, other)).toBe(false);
    expect(packageVerdict(endpoint.secret, { ...x, raw: x.raw.replace('"sw-bot"', '"sw-bot2"') })).toBeInstanceOf(
      Error,
    );
  });

  it('a delivery made 10 minutes ago (a replay of a captured one) is refused; a retry or replay now is signed anew', async () => {
    const endpoint = json(await register({ url: receiver.url, events: ['decision.allow'], standard_webhooks: true }));
    rt.clock.set(Date.now() - 10 * 60_000);
    const old = await deliverOne();
    // Still signed with X-Service-Signature (docs/webhooks-and-events.md#delivery, which has no timestamp: replayable)...
    expect(verifyWebhookSignature(old.raw, old.headers['x-service-signature'], endpoint.secret)).toBe(true);
    // ...but the Standard Webhooks check says it is old.
    const refused = packageVerdict(endpoint.secret, old);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/too old/);
    expect(verifyStandardWebhook(old.raw, old.headers, endpoint.secret)).toBe(false);
    expect(verifyStandardWebhook(old.raw, old.headers, endpoint.secret, { toleranceSeconds: 3600 })).toBe(true);

    // The service replays that delivery now: a fresh timestamp, accepted, the same webhook-id.
    rt.clock.set(Date.now());
    const [delivery] = (await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data;
    receiver.received.length = 0;
    expect(
      (
        await rt.call(rt.testKey, {
          method: 'POST',
          url: `/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/replay`,
        })
      ).statusCode,
    ).toBe(200);
    expect(await rt.services.dispatcher.runOnce()).toBe(1);
    const again = receiver.received[0]!;
    expect(again.headers['webhook-id']).toBe(old.headers['webhook-id']);
    expect(Number(again.headers['webhook-timestamp'])).toBeGreaterThan(Number(old.headers['webhook-timestamp']));
    expect(packageVerdict(endpoint.secret, again)).toEqual(again.body);
  });

  it('off by default; PUT turns it on and off', async () => {
    const r = await register({ url: receiver.url, events: ['decision.allow'] });
    const endpoint = json(r);
    expect(endpoint.standard_webhooks).toBe(false);
    const plain = await deliverOne();
    expect(plain.headers).not.toHaveProperty('webhook-signature');
    expect(plain.headers).not.toHaveProperty('webhook-id');
    expect(verifyWebhookSignature(plain.raw, plain.headers['x-service-signature'], endpoint.secret)).toBe(true);

    const on = await change(endpoint.id, { standard_webhooks: true });
    expect(on.statusCode, on.body).toBe(200);
    expect(json(on).standard_webhooks).toBe(true);
    expect(packageVerdict(endpoint.secret, await deliverOne())).toMatchObject({ object: 'event' });

    expect(json(await change(endpoint.id, { standard_webhooks: false })).standard_webhooks).toBe(false);
    expect((await deliverOne()).headers).not.toHaveProperty('webhook-signature');
  });

  it('an endpoint whose secret predates it (base64url) cannot turn it on; a wrong type is a 400', async () => {
    const endpoint = json(await register({ url: receiver.url, events: ['decision.allow'] }));
    await rt.store
      .sql`update webhook_endpoints set secret = ${'whsec_' + Buffer.alloc(32, 0xfb).toString('base64url')} where id = ${endpoint.id}`;
    const refused = await change(endpoint.id, { standard_webhooks: true });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error).toMatchObject({
      code: 'validation.invalid_field',
      details: [{ path: '/standard_webhooks' }],
    });
    expect((await rt.getOk(`/v1/webhooks/${endpoint.id}`)).standard_webhooks).toBe(false);
    expect((await register({ url: receiver.url, standard_webhooks: 'yes' })).statusCode).toBe(400);
    expect((await change(endpoint.id, { standard_webhooks: 1 })).statusCode).toBe(400);
  });
});

describe('verifyStandardWebhook and signStandardWebhook (agent-authz/webhooks)', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"id":"evt_1","object":"event"}';
  const now = Date.now();
  const ts = Math.floor(now / 1000);
  const headers = (overrides: Record<string, string | undefined> = {}) => ({
    'webhook-id': 'evt_1',
    'webhook-timestamp': String(ts),
    'webhook-signature': signStandardWebhook('evt_1', ts, body, secret),
    ...overrides,
  });

  it('signs as the standardwebhooks package does, and verifies what it signs', () => {
    const wh = new Webhook(secret);
    expect(signStandardWebhook('evt_1', ts, body, secret)).toBe(wh.sign('evt_1', new Date(ts * 1000), body));
    expect(wh.verify(body, headers())).toEqual(JSON.parse(body));
    expect(verifyStandardWebhook(Buffer.from(body), headers(), secret, { now })).toBe(true);
    expect(verifyStandardWebhook(body, new Headers(headers()), secret, { now })).toBe(true);
    // Several signatures, space-separated (a secret being rolled): one match suffices.
    expect(
      verifyStandardWebhook(
        body,
        headers({ 'webhook-signature': `v1,AAAA v1a,x ${headers()['webhook-signature']}` }),
        secret,
        { now },
      ),
    ).toBe(true);
  });

  it('refuses old and future timestamps, other bodies, ids and secrets, and missing or malformed headers', () => {
    expect(verifyStandardWebhook(body, headers(), secret, { now: now + 301_000 })).toBe(false);
    expect(verifyStandardWebhook(body, headers(), secret, { now: now - 301_000 })).toBe(false);
    expect(verifyStandardWebhook(body, headers(), secret, { now: now + 301_000, toleranceSeconds: 600 })).toBe(true);
    expect(verifyStandardWebhook(`${body} `, headers(), secret, { now })).toBe(false);
    expect(verifyStandardWebhook(body, headers({ 'webhook-id': 'evt_2' }), secret, { now })).toBe(false);
    expect(verifyStandardWebhook(body, headers(), `whsec_${Buffer.alloc(24, 1).toString('base64')}`, { now })).toBe(
      false,
    );
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      expect(verifyStandardWebhook(body, headers({ [name]: undefined }), secret, { now })).toBe(false);
    }
    expect(verifyStandardWebhook(body, headers({ 'webhook-timestamp': `${ts}.5` }), secret, { now })).toBe(false);
    expect(
      verifyStandardWebhook(
        body,
        headers({ 'webhook-signature': headers()['webhook-signature'].replace('v1,', 'v2,') }),
        secret,
        { now },
      ),
    ).toBe(false);
  });

  it('throws for a secret that is not whsec_ + base64 (a configuration error)', () => {
    expect(() => verifyStandardWebhook(body, headers(), 'whsec_not-base64_', { now })).toThrow(TypeError);
    expect(() => signStandardWebhook('evt_1', ts, body, 'whsec_')).toThrow(TypeError);
  });
});
