/**
 * Rate limits over HTTP on both stores (docs/policies.md#how-a-request-is-decided,
 * docs/budgets-and-limits.md#rate-limits): GCRA per (policy, window, agent), every matching policy's windows,
 * 429 `rate_limit.exceeded` with an exact Retry-After, nothing stored for a
 * refused request, and the platform limit per API key (AUTHZ_KEY_RATE_LIMIT).
 *
 * A limit of N per window W is a bucket of N refilled at N per W: a burst of N
 * passes, then one request every W/N. The clock is the service's (a manual one
 * here), so every figure below is exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../../compiler/policy/types.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { agent, postDecision } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

type PolicyInput = Partial<Policy> & Pick<Policy, 'effect' | 'actions'>;

describe.each(STORE_KINDS)('rate limits (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  /** The status of each request, fired one after another. */
  const statuses = async (n: number, body: Record<string, unknown>) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await postDecision(rt, body)).statusCode);
    return out;
  };
  const expect429 = async (body: Record<string, unknown>, retryAfter: number) => {
    const r = await postDecision(rt, body);
    expect(r.statusCode, r.body).toBe(429);
    expect(json(r).error.code).toBe('rate_limit.exceeded');
    expect(json(r).error.request_id).toMatch(/^req_/);
    expect(r.headers['retry-after']).toBe(String(retryAfter));
    return r;
  };
  const install = (policies: PolicyInput[]) => rt.setPolicies(policies);

  it('per_second: a burst of N, then 429 with Retry-After 1 until a slot frees', async () => {
    await install([{ id: 'pol_ps', effect: 'allow', actions: ['orders.read'], rate_limit: { per_second: 2 } }]);
    const body = { agent_id: agent('ps'), action: 'orders.read' };
    expect(await statuses(2, body)).toEqual([200, 200]);
    const r = await expect429(body, 1);
    expect(json(r).error.message).toContain('per_second of policy pol_ps');
    // One slot frees every 500 ms.
    rt.clock.advance(0.499);
    await expect429(body, 1);
    rt.clock.advance(0.001);
    expect(await statuses(2, body)).toEqual([200, 429]);
    // Another agent has its own limiter.
    expect(await statuses(2, { ...body, agent_id: agent('ps-other') })).toEqual([200, 200]);
  });

  it('per_minute, per_hour, per_day: Retry-After is the whole seconds until the next request passes', async () => {
    await install([
      { id: 'pol_pm', effect: 'allow', actions: ['orders.read'], rate_limit: { per_minute: 30 } },
      { id: 'pol_ph', effect: 'allow', actions: ['orders.list'], rate_limit: { per_hour: 4 } },
      { id: 'pol_pd', effect: 'allow', actions: ['orders.export'], rate_limit: { per_day: 3 } },
    ]);
    const a = agent('windows');
    const read = { agent_id: a, action: 'orders.read' };
    expect((await statuses(30, read)).every((s) => s === 200)).toBe(true);
    await expect429(read, 2); // one every 2 s
    rt.clock.advance(1.5);
    await expect429(read, 1); // 0.5 s left: rounded up
    rt.clock.advance(0.5);
    expect(await statuses(2, read)).toEqual([200, 429]);

    const list = { agent_id: a, action: 'orders.list' };
    expect(await statuses(4, list)).toEqual([200, 200, 200, 200]);
    await expect429(list, 900); // one every 15 min
    rt.clock.advance(899);
    await expect429(list, 1);
    rt.clock.advance(1);
    expect(await statuses(1, list)).toEqual([200]);

    const exportBody = { agent_id: a, action: 'orders.export' };
    expect(await statuses(3, exportBody)).toEqual([200, 200, 200]);
    await expect429(exportBody, 28_800); // one every 8 h
  });

  it('several windows: each must pass, and a refused request consumes from none', async () => {
    await install([
      { id: 'pol_multi', effect: 'allow', actions: ['orders.read'], rate_limit: { per_second: 1, per_minute: 2 } },
    ]);
    const body = { agent_id: agent('multi'), action: 'orders.read' };
    expect(await statuses(1, body)).toEqual([200]);
    await expect429(body, 1); // per_second; per_minute is untouched by this refusal
    rt.clock.advance(1);
    expect(await statuses(1, body)).toEqual([200]); // would be refused had the 429 counted
    rt.clock.advance(1);
    // per_minute: a bucket of 2 refilled one every 30 s; both used (t=0, t=1),
    // the first refill comes at t=30, 28 s from now.
    const r = await expect429(body, 28);
    expect(json(r).error.message).toContain('per_minute of policy pol_multi');
  });

  it("every matching policy's limits apply, not only the winner's", async () => {
    await install([
      { id: 'pol_winner', priority: 1, effect: 'allow', actions: ['orders.*'] },
      { id: 'pol_limited', priority: 90, effect: 'allow', actions: ['orders.read'], rate_limit: { per_minute: 1 } },
    ]);
    const a = agent('matching');
    const first = await postDecision(rt, { agent_id: a, action: 'orders.read' });
    expect(json(first).policy_id).toBe('pol_winner');
    await expect429({ agent_id: a, action: 'orders.read' }, 60);
    // orders.list matches only the unlimited winner.
    expect(await statuses(3, { agent_id: a, action: 'orders.list' })).toEqual([200, 200, 200]);
  });

  it('deny decisions are not limited; a 429 stores no decision and no event', async () => {
    await install([
      { id: 'pol_lim', effect: 'allow', actions: ['orders.read'], rate_limit: { per_hour: 1 } },
      { id: 'pol_no', effect: 'deny', actions: ['orders.delete'], rate_limit: { per_hour: 1 } },
    ]);
    const a = agent('stored');
    expect(await statuses(3, { agent_id: a, action: 'orders.delete' })).toEqual([200, 200, 200]);
    expect(await statuses(2, { agent_id: a, action: 'orders.read' })).toEqual([200, 429]);
    await rt.services.writer.idle();
    const decisions = (await rt.getOk(`/v1/decisions?agent_id=${a}&limit=100`)).data as Array<{ effect: string }>;
    expect(decisions.map((d) => d.effect).sort()).toEqual(['allow', 'deny', 'deny', 'deny']);
    const events = (await rt.getOk('/v1/events?limit=100')).data as Array<{ type: string; data: JsonObject }>;
    expect(events.filter((e) => e.data.decision?.agent_id === a)).toHaveLength(4);
  });

  it('a policy change keeps the limiter state (same policy id) and applies new limits at once', async () => {
    const policy: PolicyInput = {
      id: 'pol_change',
      effect: 'allow',
      actions: ['orders.read'],
      rate_limit: { per_minute: 2 },
    };
    await install([policy]);
    const body = { agent_id: agent('change'), action: 'orders.read' };
    expect(await statuses(3, body)).toEqual([200, 200, 429]);
    await install([{ ...policy, rate_limit: { per_minute: 2, per_second: 100 } }]);
    await expect429(body, 30);
    const { rate_limit: _r, ...unlimited } = policy;
    await install([unlimited]);
    expect(await statuses(2, body)).toEqual([200, 200]);
  });
});

describe.each(STORE_KINDS)('platform limit per API key (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { keyRateLimit: 3 } });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
  });
  afterAll(() => rt.close());

  it('counts every authenticated request of a key, on every route; other keys are unaffected', async () => {
    rt.clock.advance(10);
    const key = await rt.keyWith(['*']);
    const other = await rt.keyWith(['*']);
    const calls = [
      () => rt.call(key, { method: 'GET', url: '/v1/policies' }),
      () => rt.call(key, { method: 'POST', url: '/v1/decisions', payload: { agent_id: 'k', action: 'orders.read' } }),
      () => rt.call(key, { method: 'GET', url: '/v1/budgets' }),
    ];
    for (const c of calls) expect((await c()).statusCode).toBe(200);
    const r = await rt.call(key, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: 'k', action: 'orders.read' },
    });
    expect(r.statusCode).toBe(429);
    expect(json(r).error.code).toBe('rate_limit.exceeded');
    expect(json(r).error.message).toContain('platform limit of 3 requests per second');
    expect(r.headers['retry-after']).toBe('1');
    expect((await rt.call(other, { method: 'GET', url: '/v1/policies' })).statusCode).toBe(200);
    // Unauthenticated requests never reach the limiter: still 401.
    expect((await rt.call('svc_test_sk_nope', { method: 'GET', url: '/v1/policies' })).statusCode).toBe(401);
    rt.clock.advance(1 / 3);
    expect((await rt.call(key, { method: 'GET', url: '/v1/policies' })).statusCode).toBe(200);
    expect((await rt.call(key, { method: 'GET', url: '/v1/policies' })).statusCode).toBe(429);
  });
});
