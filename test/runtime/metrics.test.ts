/**
 * GET /metrics (Prometheus text format) on both stores: decisions by effect and
 * reason and their latency histogram move by exactly the decisions made;
 * webhook deliveries to a real receiver on 127.0.0.1 count by outcome
 * (succeeded, failed, abandoned) with the lag from event to success on the
 * service clock; budget gauges are per policy and unit, aggregated over agents
 * (no agent label); default process metrics; AUTHZ_METRICS_TOKEN required
 * (without it /metrics is off: 404, nothing of any tenant shown); one registry
 * per app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { decide as kitDecide } from '../helpers/kit.js';
import { parse, value, type Sample } from '../helpers/prometheus.js';

const TOKEN = 'metrics-token-0123456789abcdef';

describe.each(STORE_KINDS)('metrics (%s)', (kind) => {
  let rt: TestRuntime;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { metricsToken: TOKEN } });
    receiver = await startReceiver();
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
      { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
      { id: 'pol_review', effect: 'review', actions: ['orders.refund'] },
      {
        id: 'pol_calls',
        effect: 'allow',
        actions: ['search.run'],
        budget: { unit: 'calls', limit: 10, period: 'daily' },
      },
      {
        id: 'pol_batch',
        effect: 'allow',
        actions: ['batch.run'],
        budget: { unit: 'calls', limit: 100, period: 'daily' },
      },
    ]);
  });
  afterAll(async () => {
    await rt.close();
    await receiver.close();
  });

  const scrape = async () => {
    const r = await rt.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    return parse(r.body);
  };
  const decide = (action: string, agent = 'metrics-agent') => kitDecide(rt, { agent_id: agent, action });

  it('counts decisions by effect and reason and times each one', async () => {
    const before = await scrape();
    for (let i = 0; i < 3; i++) await decide('orders.read');
    await decide('orders.delete');
    await decide('orders.delete');
    await decide('orders.refund');
    await decide('nothing.matches');
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      value(after, name, labels) - value(before, name, labels);
    expect(delta('authz_decisions_total', { effect: 'allow', reason: 'policy.matched' })).toBe(3);
    expect(delta('authz_decisions_total', { effect: 'deny', reason: 'policy.matched' })).toBe(2);
    expect(delta('authz_decisions_total', { effect: 'review', reason: 'policy.matched' })).toBe(1);
    expect(delta('authz_decisions_total', { effect: 'deny', reason: 'policy.not_found' })).toBe(1);
    expect(delta('authz_decision_duration_seconds_count')).toBe(7);
    expect(delta('authz_decision_duration_seconds_sum')).toBeGreaterThan(0);
    // Buckets down to half a millisecond; +Inf holds every observation.
    expect(after.some((s) => s.name === 'authz_decision_duration_seconds_bucket' && s.labels.le === '0.0005')).toBe(
      true,
    );
    expect(value(after, 'authz_decision_duration_seconds_bucket', { le: '+Inf' })).toBe(
      value(after, 'authz_decision_duration_seconds_count'),
    );
    // Outcomes not seen yet are there at 0.
    expect(after.some((s) => s.name === 'authz_decisions_total' && s.labels.reason === 'agent.revoked')).toBe(true);
  });

  it("reports the decision path's store batches: decisions written and limit checks, per statement", async () => {
    const before = await scrape();
    // 20 at once: the group commit writes them in as many statements as the store's pace makes.
    await Promise.all(Array.from({ length: 20 }, (_, i) => decide('batch.run', `batch-${i % 5}`)));
    const after = await scrape();
    const delta = (name: string, batch: string) => value(after, name, { batch }) - value(before, name, { batch });
    // Every decision is written once: by the decision writer (here at least the first of each new
    // agent: its registration) or with its limits (authz_decide_batch); each batch is timed.
    const written = delta('authz_store_batch_size_sum', 'decisions');
    expect(written).toBeGreaterThanOrEqual(5);
    expect(written).toBeLessThanOrEqual(20);
    const statements = delta('authz_store_batch_size_count', 'decisions');
    expect(statements).toBeGreaterThanOrEqual(1);
    expect(statements).toBeLessThanOrEqual(written);
    expect(delta('authz_store_batch_duration_seconds_count', 'decisions')).toBe(statements);
    expect(delta('authz_store_batch_duration_seconds_sum', 'decisions')).toBeGreaterThan(0);
    // Each of them had a calls budget to check: at least 20 checks, in at most as many statements.
    expect(delta('authz_store_batch_size_sum', 'limits')).toBeGreaterThanOrEqual(20);
    expect(delta('authz_store_batch_size_count', 'limits')).toBeGreaterThanOrEqual(1);
    expect(delta('authz_store_batch_duration_seconds_count', 'limits')).toBe(
      delta('authz_store_batch_size_count', 'limits'),
    );
    expect(value(after, 'authz_store_batch_size_bucket', { batch: 'decisions', le: '+Inf' })).toBe(
      value(after, 'authz_store_batch_size_count', { batch: 'decisions' }),
    );
  });

  it('does not count a request refused before a decision (validation)', async () => {
    const before = await scrape();
    const r = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: 'a', action: 'Bad Action' },
    });
    expect(r.statusCode).toBe(400);
    const after = await scrape();
    expect(value(after, 'authz_decision_duration_seconds_count')).toBe(
      value(before, 'authz_decision_duration_seconds_count'),
    );
  });

  it('reports budget usage per policy and unit, summed over agents, without an agent label', async () => {
    await decide('search.run', 'budget-a');
    await decide('search.run', 'budget-a');
    await decide('search.run', 'budget-b');
    await decide('search.run', 'budget-c');
    const samples = await scrape();
    const labels = {
      account_id: rt.accountId,
      environment: 'test',
      policy_id: 'pol_calls',
      unit: 'calls',
      period: 'daily',
    };
    expect(value(samples, 'authz_budget_consumed', labels)).toBe(4);
    expect(value(samples, 'authz_budget_held', labels)).toBe(0);
    expect(value(samples, 'authz_budget_limit', labels)).toBe(10);
    expect(value(samples, 'authz_budget_agents', labels)).toBe(3);
    expect(value(samples, 'authz_budget_max_utilization', labels)).toBeCloseTo(0.2, 10);
    expect(samples.filter((s) => s.name.startsWith('authz_')).every((s) => !('agent_id' in s.labels))).toBe(true);
  });

  it('counts webhook deliveries by outcome and the lag of successes', async () => {
    const endpoint = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: receiver.url, events: ['decision.deny'] },
      }),
    );
    expect(endpoint.id).toMatch(/^we_/);
    await rt.services.dispatcher.runOnce(); // nothing of earlier tests is due for this endpoint
    const before = await scrape();
    const delta = (after: Sample[], name: string, labels: Record<string, string> = {}) =>
      value(after, name, labels) - value(before, name, labels);

    // Two events, delivered 3 s (service clock) after they were created.
    await decide('orders.delete', 'hook-1');
    await decide('orders.delete', 'hook-2');
    rt.clock.advance(3);
    receiver.received.length = 0;
    expect(await rt.services.dispatcher.runOnce()).toBe(2);
    let after = await scrape();
    expect(receiver.received).toHaveLength(2);
    expect(delta(after, 'authz_webhook_deliveries_total', { outcome: 'succeeded' })).toBe(2);
    expect(delta(after, 'authz_webhook_delivery_lag_seconds_count')).toBe(2);
    expect(delta(after, 'authz_webhook_delivery_lag_seconds_sum')).toBeCloseTo(6, 6);
    expect(delta(after, 'authz_webhook_delivery_lag_seconds_bucket', { le: '2.5' })).toBe(0);
    expect(delta(after, 'authz_webhook_delivery_lag_seconds_bucket', { le: '5' })).toBe(2);

    // One event the receiver refuses at every attempt: six failures, then abandoned.
    receiver.status.code = 500;
    await decide('orders.delete', 'hook-3');
    for (let i = 0; i < 7; i++) {
      expect(await rt.services.dispatcher.runOnce()).toBe(1);
      rt.clock.advance(15 * 3600);
    }
    after = await scrape();
    expect(delta(after, 'authz_webhook_deliveries_total', { outcome: 'failed' })).toBe(6);
    expect(delta(after, 'authz_webhook_deliveries_total', { outcome: 'abandoned' })).toBe(1);
    expect(delta(after, 'authz_webhook_delivery_lag_seconds_count')).toBe(2);
    await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${endpoint.id}` });
  });

  it("includes the process's default metrics", async () => {
    const samples = await scrape();
    expect(samples.some((s) => s.name === 'process_cpu_user_seconds_total')).toBe(true);
    expect(samples.some((s) => s.name.startsWith('nodejs_'))).toBe(true);
  });
});

describe('metrics token and registries', () => {
  let guarded: TestRuntime;
  let other: TestRuntime;
  let unset: TestRuntime;
  const OTHER_TOKEN = 'other-metrics-token-0123456789';
  beforeAll(async () => {
    guarded = await startRuntime('embedded', { config: { metricsToken: TOKEN } });
    other = await startRuntime('embedded', { config: { metricsToken: OTHER_TOKEN } });
    unset = await startRuntime('embedded');
  });
  afterAll(async () => {
    await guarded.close();
    await other.close();
    await unset.close();
  });

  it('answers only the AUTHZ_METRICS_TOKEN bearer token', async () => {
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789',
      `Bearer ${guarded.testKey}`,
      `Bearer ${OTHER_TOKEN}`,
    ]) {
      const r = await guarded.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: authorization ? { authorization } : {},
      });
      expect(r.statusCode).toBe(401);
      expect(json(r).error.code).toBe('auth.invalid_metrics_token');
    }
    const ok = await guarded.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('authz_decisions_total');
  });

  it('is off without AUTHZ_METRICS_TOKEN: 404 saying how to turn it on, and no tenant data', async () => {
    await unset.setPolicies([
      {
        id: 'pol_secret_budget',
        effect: 'allow',
        actions: ['search.run'],
        budget: { unit: 'calls', limit: 10, period: 'daily' },
      },
    ]);
    expect(
      (
        await unset.call(unset.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'x', action: 'search.run' },
        })
      ).statusCode,
    ).toBe(200);
    for (const authorization of [undefined, `Bearer ${TOKEN}`, `Bearer ${unset.testKey}`]) {
      const r = await unset.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: authorization ? { authorization } : {},
      });
      expect(r.statusCode).toBe(404);
      expect(json(r).error.code).toBe('route.not_found');
      expect(json(r).error.message).toContain('AUTHZ_METRICS_TOKEN');
      expect(r.body).not.toContain(unset.accountId);
      expect(r.body).not.toContain('pol_secret_budget');
    }
  });

  it('keeps one registry per app: decisions of one app do not show in another', async () => {
    await guarded.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    const r = await guarded.call(guarded.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: 'x', action: 'orders.read' },
    });
    expect(r.statusCode).toBe(200);
    const mine = parse(
      (await guarded.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } }))
        .body,
    );
    const theirs = parse(
      (await other.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${OTHER_TOKEN}` } }))
        .body,
    );
    expect(value(mine, 'authz_decisions_total', { effect: 'allow', reason: 'policy.matched' })).toBe(1);
    expect(value(theirs, 'authz_decisions_total', { effect: 'allow', reason: 'policy.matched' })).toBe(0);
  });
});
