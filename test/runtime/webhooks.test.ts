/**
 * Webhooks over HTTP on both stores, delivered to a real receiver on 127.0.0.1
 * (docs/webhooks-and-events.md): endpoints and their
 * rules, signed deliveries with the documented headers, event filters, the retry
 * schedule attempt by attempt on the service clock, the deliveries API, replay,
 * and a restart with pending deliveries.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../../runtime/webhooks/dispatcher.js';
import { claimDueDeliveries } from '../../runtime/store/webhooks.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { postDecision } from '../helpers/kit.js';

describe.each(STORE_KINDS)('webhooks (%s)', (kind) => {
  let rt: TestRuntime;
  let receiver: Receiver;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    receiver = await startReceiver();
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
      { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
    ]);
  });
  afterAll(async () => {
    await rt.close();
    await receiver.close();
  });
  beforeEach(async () => {
    // Each test starts with no endpoint and nothing due.
    for (const e of (await rt.getOk('/v1/webhooks?limit=100')).data)
      await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${e.id}` });
    receiver.received.length = 0;
    receiver.status.code = 200;
  });

  const register = async (body: Record<string, unknown>, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: '/v1/webhooks', payload: body });
  const decide = (action: string, agent = 'hook-agent') => postDecision(rt, { agent_id: agent, action });
  const deliver = () => rt.services.dispatcher.runOnce();

  it('registers an endpoint (secret shown once), signs deliveries with the headers of docs/webhooks-and-events.md#delivery', async () => {
    const r = await register({ url: receiver.url, events: ['*'], description: 'all' });
    expect(r.statusCode).toBe(201);
    const endpoint = json(r);
    expect(endpoint).toMatchObject({
      object: 'webhook_endpoint',
      url: receiver.url,
      events: ['*'],
      status: 'enabled',
      description: 'all',
      livemode: false,
    });
    expect(endpoint.id).toMatch(/^we_/);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const read = await rt.getOk(`/v1/webhooks/${endpoint.id}`);
    expect(read).not.toHaveProperty('secret');
    expect((await rt.getOk('/v1/webhooks')).data.map((e: { id: string }) => e.id)).toEqual([endpoint.id]);

    const d = json(await decide('orders.read', 'hook-new-agent'));
    expect(await deliver()).toBe(2); // agent.registered + decision.allow
    const types = receiver.received.map((x) => x.body.type).sort();
    expect(types).toEqual(['agent.registered', 'decision.allow']);
    for (const x of receiver.received) {
      expect(x.headers['content-type']).toBe('application/json');
      const expected = `sha256=${createHmac('sha256', endpoint.secret).update(x.raw).digest('hex')}`;
      expect(x.headers['x-service-signature']).toBe(expected);
      expect(x.headers['x-service-event-id']).toBe(x.body.id);
      expect(x.headers['x-service-delivery-attempt']).toBe('1');
      expect(x.body).toMatchObject({ object: 'event', account_id: rt.accountId, livemode: false });
      expect(x.body.id).toMatch(/^evt_/);
      expect(x.body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    const allow = receiver.received.find((x) => x.body.type === 'decision.allow')!;
    expect(allow.body.data.decision.id).toBe(d.id);
    // The same envelope as GET /v1/events/:id.
    expect(await rt.getOk(`/v1/events/${allow.body.id}`)).toEqual(allow.body);
    expect(await deliver()).toBe(0);
  });

  it('filters by event type; an unknown type and a bad URL are 400s; needs webhooks:manage', async () => {
    const denyOnly = json(await register({ url: receiver.url, events: ['decision.deny'] }));
    await decide('orders.read');
    await decide('orders.delete');
    await deliver();
    expect(receiver.received.map((x) => x.body.type)).toEqual(['decision.deny']);
    expect(
      json(await rt.call(rt.testKey, { method: 'GET', url: `/v1/webhooks/${denyOnly.id}/deliveries` })).data,
    ).toHaveLength(1);

    const unknown = await register({ url: receiver.url, events: ['decision.maybe'] });
    expect(unknown.statusCode).toBe(400);
    expect(json(unknown).error.code).toBe('validation.invalid_field');
    for (const url of [
      'ftp://127.0.0.1/x',
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'not a url',
    ]) {
      const bad = await register({ url });
      expect(bad.statusCode, url).toBe(400);
      expect(json(bad).error.code, url).toBe('validation.invalid_url');
    }
    // Live: https and public addresses only.
    for (const url of [
      receiver.url,
      'https://127.0.0.1/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://0x7f000001/hook',
    ]) {
      const bad = await register({ url }, rt.liveKey);
      expect(bad.statusCode, url).toBe(400);
      expect(json(bad).error.code, url).toBe('validation.invalid_url');
    }
    const noScope = await rt.keyWith(['events:read']);
    expect(json(await register({ url: receiver.url }, noScope)).error.code).toBe('auth.scope_insufficient');
    // Another account sees none of these endpoints.
    expect((await rt.call(rt.otherKey, { method: 'GET', url: `/v1/webhooks/${denyOnly.id}` })).statusCode).toBe(404);
  });

  it('retries on the schedule of docs/webhooks-and-events.md#delivery, from each attempt, then abandons; the deliveries API shows every attempt', async () => {
    const endpoint = json(await register({ url: receiver.url, events: ['decision.deny'] }));
    receiver.status.code = 500;
    await decide('orders.delete');
    const start = rt.clock.now();
    expect(await deliver()).toBe(1);
    const delays = [30, 300, 1800, 7200, 28800, 50400];
    let at = start;
    for (const [i, delay] of delays.entries()) {
      rt.clock.set(at + delay * 1000 - 1);
      expect(await deliver(), `retry ${i + 1} not before ${delay} s`).toBe(0);
      rt.clock.set(at + delay * 1000);
      at = rt.clock.now();
      expect(await deliver(), `retry ${i + 1} at ${delay} s`).toBe(1);
    }
    rt.clock.advance(30 * 86400);
    expect(await deliver()).toBe(0);
    expect(receiver.received.map((x) => x.headers['x-service-delivery-attempt'])).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
    ]);
    expect(new Set(receiver.received.map((x) => x.body.id)).size).toBe(1);

    const [delivery] = (await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data;
    expect(delivery).toMatchObject({
      object: 'webhook_delivery',
      status: 'abandoned',
      attempt: 7,
      status_code: 500,
      next_attempt_at: null,
      event_type: 'decision.deny',
    });
    expect(delivery.id).toMatch(/^whd_/);
    expect(delivery.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const gaps = delivery.attempts
      .slice(0, 6)
      .map(
        (a: { started_at: string; next_attempt_at: string }) =>
          (Date.parse(a.next_attempt_at) - Date.parse(a.started_at)) / 1000,
      );
    expect(gaps).toEqual(delays);
    expect(delivery.attempts[6].next_attempt_at).toBeNull();
    expect(delivery.attempts[0]).toMatchObject({ status_code: 500, error: 'HTTP 500' });
    expect(typeof delivery.attempts[0].duration_ms).toBe('number');

    // Replay: the same event again, now, as a new delivery.
    receiver.status.code = 204;
    const replay = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/replay`,
    });
    expect(replay.statusCode).toBe(200);
    expect(json(replay)).toMatchObject({
      status: 'pending',
      replay_of: delivery.id,
      event_id: delivery.event_id,
      attempt: 0,
    });
    expect(await deliver()).toBe(1);
    expect(receiver.received.at(-1)!.body.id).toBe(delivery.event_id);
    const after = await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`);
    expect(after.data[0]).toMatchObject({ id: json(replay).id, status: 'succeeded', status_code: 204, attempt: 1 });
    const missing = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/webhooks/${endpoint.id}/deliveries/whd_nope/replay`,
    });
    expect(json(missing).error.code).toBe('delivery.not_found');
  });

  it('an unreachable endpoint fails with an error and is retried; disabling stops deliveries; deletion is 404 afterwards', async () => {
    const dead = await startReceiver();
    await dead.close();
    const endpoint = json(await register({ url: dead.url, events: ['decision.allow'] }));
    await decide('orders.read');
    expect(await deliver()).toBe(1);
    const [d] = (await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data;
    expect(d).toMatchObject({ status: 'pending', status_code: null });
    expect(d.error).toMatch(/ECONNREFUSED/);

    const disabled = await rt.call(rt.testKey, {
      method: 'PUT',
      url: `/v1/webhooks/${endpoint.id}`,
      payload: { status: 'disabled', url: receiver.url },
    });
    expect(json(disabled)).toMatchObject({ status: 'disabled', url: receiver.url });
    await decide('orders.read');
    expect((await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data).toHaveLength(1);
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${endpoint.id}` })).statusCode).toBe(200);
    const gone = await rt.call(rt.testKey, { method: 'GET', url: `/v1/webhooks/${endpoint.id}` });
    expect(gone.statusCode).toBe(404);
    expect(json(gone).error.code).toBe('webhook.not_found');
  });

  it('a dispatcher that died holding a claim loses nothing: the attempt is made again once its lease runs out', async () => {
    json(await register({ url: receiver.url, events: ['decision.deny'] }));
    await decide('orders.delete');
    // A process claims the delivery (1 s lease) and dies before sending it.
    const [claimed] = await claimDueDeliveries(rt.store.sql, rt.clock.now(), 10, 10, [], 1);
    expect(claimed).toBeDefined();
    expect(await deliver()).toBe(0);
    // Until the lease (real time, the store's clock) runs out nothing is due; then the attempt is made again.
    await expect.poll(deliver, { timeout: 10_000, interval: 100 }).toBe(1);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.body.id).toBe(claimed!.event_id);
    expect(receiver.received[0]!.headers['x-service-delivery-attempt']).toBe('2');
  });

  it('a slow endpoint does not delay the others (per-endpoint cap)', async () => {
    const hanging = createServer(() => {}); // accepts, never answers
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const slowUrl = `http://127.0.0.1:${(hanging.address() as { port: number }).port}/hooks`;
    await register({ url: slowUrl, events: ['decision.deny'] });
    await register({ url: receiver.url, events: ['decision.deny'] });
    for (let i = 0; i < 40; i++) await decide('orders.delete', `slow-${i}`);
    // A stop grace past the 3 s timeout: the slow attempts in flight time out and are recorded, not cut off at stop.
    const dispatcher = new WebhookDispatcher(rt.store.sql, rt.clock, {
      allowPrivate: false,
      perEndpoint: 4,
      timeoutMs: 3000,
      stopGraceMs: 10_000,
    });
    const slowAttempts = async () => {
      const slow = (await rt.getOk('/v1/webhooks?limit=100')).data.find((e: { url: string }) => e.url === slowUrl);
      return (
        (await rt.getOk(`/v1/webhooks/${slow.id}/deliveries?limit=100`)).data as Array<{
          attempt: number;
          error: string;
          status: string;
        }>
      ).filter((d) => d.attempt > 0);
    };
    dispatcher.start();
    try {
      const started = Date.now();
      while (receiver.received.length < 40 && Date.now() - started < 10_000)
        await new Promise((r) => setTimeout(r, 20));
      // All 40 reached the healthy endpoint while the slow one's first attempts were
      // still hanging: none of them has finished (timed out) yet.
      expect(receiver.received).toHaveLength(40);
      expect(await slowAttempts()).toEqual([]);
    } finally {
      await dispatcher.stop();
      hanging.closeAllConnections();
      await new Promise((r) => hanging.close(r));
    }
    // Stopping waited for them: each timed out and is due again; at most 4 were tried at once.
    const attempts = await slowAttempts();
    expect(attempts.length).toBeGreaterThan(0);
    expect(attempts.length).toBeLessThanOrEqual(4);
    expect(attempts.every((d) => /no response within 3 s/.test(d.error) && d.status === 'pending')).toBe(true);
  });
});

describe('pending deliveries survive a restart', () => {
  it('events stored before a stop are delivered by the next process', async () => {
    const receiver = await startReceiver();
    const first = await startRuntime('postgres');
    const endpoint = json(
      await first.call(first.testKey, { method: 'POST', url: '/v1/webhooks', payload: { url: receiver.url } }),
    );
    await first.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    for (let i = 0; i < 5; i++)
      await first.call(first.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'restart', action: 'orders.read' },
      });
    await first.services.writer.idle();
    // Stopped before its dispatcher ever ran: everything is still pending in the store.
    await first.app.close();
    const second = await startRuntime('postgres', { store: first.store });
    try {
      await second.services.dispatcher.runOnce();
      // 5 decisions, the agent's registration and the policy change (policy.updated).
      const events = (await second.getOk('/v1/events?limit=100', second.testKey)).data.length;
      expect(receiver.received.length).toBe(events);
      expect(new Set(receiver.received.map((x) => x.body.id)).size).toBe(events);
      expect(receiver.received.every((x) => x.headers['x-service-delivery-attempt'] === '1')).toBe(true);
      expect(endpoint.id).toMatch(/^we_/);
    } finally {
      await second.close();
      await first.close();
      await receiver.close();
    }
  });
});
