/**
 * Every event type of docs/webhooks-and-events.md#events is delivered to a real receiver on
 * 127.0.0.1, on both stores: signed over the exact body with the endpoint's
 * secret, with the documented data shape, and only to the endpoints whose filter
 * names it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ALERT_THRESHOLDS } from '../../runtime/alerts/security-alerts.js';
import { verifyWebhookSignature } from '../../webhook-receiver/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { decide as kitDecide } from '../helpers/kit.js';

const ALL_TYPES = [
  'agent.registered',
  'agent.revoked',
  'budget.exceeded',
  'budget.threshold',
  'decision.allow',
  'decision.deny',
  'decision.review',
  'policy.updated',
  'security.alert',
];

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

async function startReceiver(): Promise<{ base: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    base: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Connections still open (a held answer, a keep-alive socket) would keep close() waiting.
        server.closeAllConnections();
      }),
  };
}

describe.each(STORE_KINDS)('every event type is delivered (%s)', (kind) => {
  let rt: TestRuntime;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { alerts: { ...DEFAULT_ALERT_THRESHOLDS, denyThreshold: 2 } } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await rt.close();
    await receiver.close();
  });

  it('signed, with the data of docs/webhooks-and-events.md#events, filtered per endpoint', async () => {
    const all = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: `${receiver.base}/all`, events: ['*'] },
      }),
    );
    const some = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: `${receiver.base}/some`, events: ['budget.exceeded', 'security.alert'] },
      }),
    );
    const decide = (agent_id: string, action: string) => kitDecide(rt, { agent_id, action });

    // policy.updated (created) for each policy made through the API.
    const policies = [
      {
        id: 'pol_reads',
        name: 'reads',
        effect: 'allow',
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: 2, period: 'monthly', threshold_alert: 0.5 },
      },
      { id: 'pol_refunds', name: 'refunds', effect: 'review', actions: ['payments.refund'] },
      { id: 'pol_deletes', name: 'deletes', effect: 'deny', actions: ['orders.delete'] },
    ];
    for (const payload of policies)
      expect((await rt.call(rt.testKey, { method: 'POST', url: '/v1/policies', payload })).statusCode).toBe(201);

    expect((await decide('evt-agent', 'orders.read')).effect).toBe('allow'); // agent.registered, decision.allow, budget.threshold (1 of 2)
    expect((await decide('evt-agent', 'orders.read')).effect).toBe('allow'); // budget.exceeded (2 of 2)
    expect((await decide('evt-agent', 'orders.read')).reason).toBe('budget.exceeded');
    expect((await decide('evt-agent', 'payments.refund')).reason).toBe('budget.exceeded'); // every decision for the agent
    expect((await decide('evt-other', 'payments.refund')).effect).toBe('review'); // decision.review
    for (let i = 0; i < 3; i++) expect((await decide('evt-other', 'orders.delete')).effect).toBe('deny'); // decision.deny; the 3rd is a deny spike
    expect((await rt.call(rt.testKey, { method: 'POST', url: '/v1/agents/evt-other/revoke' })).statusCode).toBe(200); // agent.revoked
    await rt.services.alerts.idle();

    while ((await rt.services.dispatcher.runOnce()) > 0);
    const toAll = receiver.received.filter((r) => r.path === '/all');
    const toSome = receiver.received.filter((r) => r.path === '/some');
    const parsed = (list: Received[], secret: string) =>
      list.map((r) => {
        expect(verifyWebhookSignature(r.raw, r.headers['x-service-signature'], secret)).toBe(true);
        const body = JSON.parse(r.raw.toString('utf8'));
        expect(r.headers['x-service-event-id']).toBe(body.id);
        return body as { id: string; type: string; account_id: string; data: JsonObject };
      });
    const allEvents = parsed(toAll, all.secret);
    const someEvents = parsed(toSome, some.secret);

    expect([...new Set(allEvents.map((e) => e.type))].sort()).toEqual(ALL_TYPES);
    expect([...new Set(someEvents.map((e) => e.type))].sort()).toEqual(['budget.exceeded', 'security.alert']);
    // Each event went to the filtered endpoint once, with the same envelope id as to the other.
    const filtered = allEvents.filter((e) => e.type === 'budget.exceeded' || e.type === 'security.alert');
    expect(someEvents.map((e) => e.id).sort()).toEqual(filtered.map((e) => e.id).sort());
    // Every stored event of the account went to the catch-all endpoint exactly once.
    const stored = (await rt.getOk('/v1/events?limit=100')).data as Array<{ id: string }>;
    expect(allEvents.map((e) => e.id).sort()).toEqual(stored.map((e) => e.id).sort());

    const one = (type: string) => allEvents.find((e) => e.type === type)!.data;
    expect(one('decision.allow').decision).toMatchObject({
      effect: 'allow',
      agent_id: 'evt-agent',
      action: 'orders.read',
    });
    expect(one('decision.review').decision).toMatchObject({
      effect: 'review',
      agent_id: 'evt-other',
      action: 'payments.refund',
    });
    const denies = allEvents.filter((e) => e.type === 'decision.deny').map((e) => e.data.decision);
    expect(denies.map((d) => [d.agent_id, d.action, d.reason])).toEqual(
      expect.arrayContaining([
        ['evt-agent', 'orders.read', 'budget.exceeded'],
        ['evt-agent', 'payments.refund', 'budget.exceeded'],
        ['evt-other', 'orders.delete', 'policy.matched'],
      ]),
    );
    expect(denies).toHaveLength(5);
    expect(Object.keys(one('decision.deny').decision)).toEqual(
      expect.arrayContaining(['id', 'effect', 'reason', 'agent_id', 'action', 'resource', 'evaluated_at']),
    );
    const budgetFields = {
      agent_id: 'evt-agent',
      policy_id: 'pol_reads',
      budget_unit: 'calls',
      budget_limit: 2,
      threshold_pct: 0.5,
      period: 'monthly',
      period_resets_at: '2026-12-01T00:00:00.000Z',
    };
    expect(one('budget.threshold')).toMatchObject({
      ...budgetFields,
      budget_consumed: 1,
      reason: 'budget.below_threshold',
    });
    expect(one('budget.exceeded')).toMatchObject({ ...budgetFields, budget_consumed: 2 });
    expect(
      allEvents
        .filter((e) => e.type === 'agent.registered')
        .map((e) => e.data.agent_id)
        .sort(),
    ).toEqual(['evt-agent', 'evt-other']);
    expect(one('agent.revoked')).toMatchObject({
      agent_id: 'evt-other',
      agent: { agent_id: 'evt-other', status: 'revoked' },
    });
    expect(
      allEvents
        .filter((e) => e.type === 'policy.updated')
        .map((e) => [e.data.policy.id, e.data.change])
        .sort(),
    ).toEqual([
      ['pol_deletes', 'created'],
      ['pol_reads', 'created'],
      ['pol_refunds', 'created'],
    ]);
    expect(one('security.alert')).toEqual({
      alert: 'deny_spike',
      agent_id: 'evt-other',
      count: 3,
      window_seconds: 60,
      threshold: 2,
    });
    for (const e of allEvents) expect(e.account_id).toBe(rt.accountId);
  });
});
