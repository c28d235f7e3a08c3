/**
 * Budgets and rate limits across server processes (docs/budgets-and-limits.md#budgets, "Held +
 * consumed never exceeds the limit, even under concurrent requests on several
 * server processes"; Decisions, 429 `rate_limit.exceeded`; evaluation step 3).
 *
 * Two real `authz serve` child processes (bin/authz.js -> dist/runtime/serve.js)
 * on one PostgreSQL database, on the real clock, driven over real HTTP:
 * concurrent fiat and calls decisions never overspend, a rate limit holds in
 * total across both processes, and a budget exhausted through one process
 * blocks the agent in the other (NOTIFY on authz_budgets: the periodic reload
 * is set to an hour, so NOTIFY is the only way). No timing is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, serverCalls, split, startServer, stopAll, uniqueId, type Server } from '../helpers/db-servers.js';
import { ensureBuilt, request, type Reply } from '../helpers/server-process.js';
import { createTestDatabase } from '../helpers/postgres.js';
import type { JsonObject } from '../helpers/json.js';

const TEST_TIMEOUT = 60_000;

const agent = uniqueId;

describe('budgets and rate limits across two `authz serve` processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let a: Server;
  let b: Server;
  let key = '';

  const { api, decide, decideOk, install: installOn } = serverCalls(() => key);
  /**
   * The agent's budget rows of one policy. With agent_id the list has every enabled
   * budget whose agent filter covers the agent, used or not (runtime/spend-limits/
   * budget-list.ts), so other tests' policies show up with zeros.
   */
  const budgetsOf = async (server: Server, agentId: string, policyId: string) => {
    const r = await api(server, 'GET', `/v1/budgets?agent_id=${encodeURIComponent(agentId)}&limit=100`);
    expect(r.status, `${server.name}: ${JSON.stringify(r.body)}`).toBe(200);
    return (r.body.data as Array<JsonObject>).filter((row) => row.policy_id === policyId);
  };

  /** Creates the policy through A (POST) and waits until both processes decide with it. */
  function install(policy: Record<string, unknown>, probe: Record<string, unknown>) {
    return installOn([a, b], policy, (server) => ({ ...probe, agent_id: agent(`probe-${server.name}`) }));
  }

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDatabase();
    // One after the other: each start runs the migrations.
    a = await startServer('A', db.url);
    b = await startServer('B', db.url);
    const account = await request(a.base, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'limits-processes' });
    expect(account.status, JSON.stringify(account.body)).toBe(201);
    const created = await request(a.base, ADMIN_TOKEN, 'POST', `/admin/accounts/${account.body.id}/api-keys`, {
      environment: 'test',
      scopes: ['*'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    key = created.body.key as string;
    expect(key).toMatch(/^svc_test_sk_/);
    // The key works on both processes (B reads it from the store).
    for (const server of [a, b]) expect((await api(server, 'GET', '/v1/policies')).status).toBe(200);
  }, 90_000);

  afterAll(async () => {
    // Only the processes started here; a failed test must not leave one behind.
    await stopAll();
    await db?.drop();
  }, 60_000);

  it(
    'a USD budget: 200 concurrent decisions over both processes hold exactly floor(1000/7) = 142 x 7, never more; confirm moves held to consumed',
    async () => {
      await install(
        {
          id: 'pol_usd',
          name: 'usd-monthly',
          effect: 'allow',
          actions: ['payments.charge'],
          budget: { unit: 'USD', limit: 1000, period: 'monthly' },
        },
        { action: 'payments.charge', amount: 0 },
      );
      const agentId = agent('usd');
      const body = { agent_id: agentId, action: 'payments.charge', resource: 'customer:1', amount: 7 };
      const replies = await Promise.all(split(200, a, b).map((server) => decide(server, body)));
      for (const r of replies) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const allowed = replies.filter((r) => r.body.effect === 'allow');
      const denied = replies.filter((r) => r.body.effect !== 'allow');
      // Never overspent, and nothing refused that would have fit.
      expect(allowed.length * 7).toBeLessThanOrEqual(1000);
      expect(allowed.length).toBe(142);
      expect(denied.length).toBe(58);
      for (const d of allowed)
        expect(d.body).toMatchObject({ reason: 'policy.matched', policy_id: 'pol_usd', status: 'pending', amount: 7 });
      for (const d of denied) {
        expect(d.body).toMatchObject({
          effect: 'deny',
          reason: 'budget.exceeded',
          policy_id: 'pol_usd',
          status: 'denied',
          permit_token: null,
        });
      }
      // Both processes took part on both sides of the line.
      const byServer = (list: Reply[]) => list.map((r) => replies.indexOf(r) % 2);
      expect(new Set(byServer(allowed)).size + new Set(byServer(denied)).size).toBeGreaterThanOrEqual(3);

      // Monthly periods on UTC calendar boundaries: the first of next month, midnight UTC.
      const now = new Date();
      const resets = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
      const expected = {
        policy_id: 'pol_usd',
        agent_id: agentId,
        unit: 'USD',
        limit: 1000,
        period: 'monthly',
        period_resets_at: resets,
        consumed: 0,
        held: 994,
        status: 'ok',
      };
      for (const server of [a, b])
        expect(await budgetsOf(server, agentId, 'pol_usd')).toEqual([expect.objectContaining(expected)]);

      // Confirm three: two with the held amount through A, one for less through B.
      const [c1, c2, c3] = allowed.map((r) => r.body.id as string);
      expect((await api(a, 'POST', `/v1/decisions/${c1}/confirm`)).body).toMatchObject({ id: c1, status: 'confirmed' });
      expect((await api(a, 'POST', `/v1/decisions/${c2}/confirm`, {})).body).toMatchObject({
        id: c2,
        status: 'confirmed',
      });
      expect((await api(b, 'POST', `/v1/decisions/${c3}/confirm`, { amount: 5 })).body).toMatchObject({
        id: c3,
        status: 'confirmed',
      });
      // Confirmed holds become consumption (7 + 7 + 5), the rest stays held.
      for (const server of [a, b]) {
        expect(await budgetsOf(server, agentId, 'pol_usd')).toEqual([
          expect.objectContaining({ ...expected, consumed: 19, held: 994 - 21 }),
        ]);
        expect((await api(server, 'GET', `/v1/decisions/${c1}`)).body.status).toBe('confirmed');
      }
      // The 2 released by the smaller confirmation leave 1000 - 19 - 973 = 8: one more 7 fits, then none.
      expect(await decideOk(b, body)).toMatchObject({ effect: 'allow', reason: 'policy.matched' });
      expect(await decideOk(a, body)).toMatchObject({ effect: 'deny', reason: 'budget.exceeded' });
      expect(await decideOk(b, body)).toMatchObject({ effect: 'deny', reason: 'budget.exceeded' });
      for (const server of [a, b])
        expect(await budgetsOf(server, agentId, 'pol_usd')).toEqual([
          expect.objectContaining({ ...expected, consumed: 19, held: 980 }),
        ]);
    },
    TEST_TIMEOUT,
  );

  it(
    'a calls budget: 200 concurrent decisions over both processes consume exactly the limit (50); the agent is then denied on both',
    async () => {
      await install(
        {
          id: 'pol_calls_50',
          name: 'calls-50',
          effect: 'allow',
          actions: ['tickets.create'],
          budget: { unit: 'calls', limit: 50, period: 'daily' },
        },
        { action: 'tickets.create' },
      );
      const agentId = agent('calls');
      const body = { agent_id: agentId, action: 'tickets.create' };
      const replies = await Promise.all(split(200, a, b).map((server) => decide(server, body)));
      for (const r of replies) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const allowed = replies.filter((r) => r.body.effect === 'allow');
      expect(allowed.length).toBe(50);
      for (const r of replies.filter((x) => x.body.effect !== 'allow'))
        expect(r.body).toMatchObject({ effect: 'deny', reason: 'budget.exceeded', policy_id: 'pol_calls_50' });
      for (const server of [a, b]) {
        expect(await budgetsOf(server, agentId, 'pol_calls_50')).toEqual([
          expect.objectContaining({
            policy_id: 'pol_calls_50',
            agent_id: agentId,
            unit: 'calls',
            limit: 50,
            consumed: 50,
            held: 0,
            period: 'daily',
            status: 'exceeded',
          }),
        ]);
        expect(await decideOk(server, body)).toMatchObject({ effect: 'deny', reason: 'budget.exceeded' });
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'a rate limit of 30 per hour holds in total across both processes: 100 concurrent requests, 30 pass, the rest 429 with Retry-After',
    async () => {
      await install(
        {
          id: 'pol_rate_30',
          name: 'rate-30',
          effect: 'allow',
          actions: ['orders.search'],
          rate_limit: { per_hour: 30 },
        },
        { action: 'orders.search' },
      );
      const agentId = agent('rate');
      const body = { agent_id: agentId, action: 'orders.search' };
      const replies = await Promise.all(split(100, a, b).map((server) => decide(server, body)));
      const ok = replies.filter((r) => r.status === 200);
      const limited = replies.filter((r) => r.status === 429);
      expect(
        ok.length + limited.length,
        JSON.stringify(replies.find((r) => r.status !== 200 && r.status !== 429)?.body),
      ).toBe(100);
      // 30 per hour is a burst of 30 refilled one every 120 s (real clock), longer
      // than this test may run (TEST_TIMEOUT): exactly 30 pass, however slow the machine.
      expect(ok.length).toBe(30);
      expect(limited.length).toBe(70);
      for (const r of ok) expect(r.body).toMatchObject({ effect: 'allow', policy_id: 'pol_rate_30' });
      for (const r of limited) {
        expect(r.body.error).toMatchObject({ code: 'rate_limit.exceeded' });
        expect(r.body.error.request_id).toMatch(/^req_/);
        const retryAfter = r.headers.get('retry-after');
        expect(retryAfter).toMatch(/^\d+$/);
        expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
        expect(Number(retryAfter)).toBeLessThanOrEqual(120);
      }
      // Both processes refused some: the limiter is shared, not per process.
      expect(new Set(limited.map((r) => replies.indexOf(r) % 2)).size).toBe(2);
      // Refused requests stored no decision: only the 30 allowed ones are listed.
      const listed = await api(b, 'GET', `/v1/decisions?agent_id=${encodeURIComponent(agentId)}&limit=100`);
      expect(listed.status).toBe(200);
      expect(listed.body.data.length).toBe(30);
    },
    TEST_TIMEOUT,
  );

  it(
    'exhaustion crosses processes: a calls budget used up through A blocks the agent in B (by NOTIFY), for an action of another policy',
    async () => {
      await install(
        {
          id: 'pol_calls_3',
          name: 'calls-3',
          effect: 'allow',
          actions: ['reports.read'],
          budget: { unit: 'calls', limit: 3, period: 'daily' },
        },
        { action: 'reports.read' },
      );
      await install(
        { id: 'pol_reports_list', name: 'reports-list', effect: 'allow', actions: ['reports.list'] },
        { action: 'reports.list' },
      );
      const agentId = agent('exhaust');
      const list = { agent_id: agentId, action: 'reports.list' };
      // Before: B allows the other action (it has no budget).
      expect(await decideOk(b, list)).toMatchObject({ effect: 'allow', policy_id: 'pol_reports_list' });

      for (let i = 0; i < 3; i++)
        expect(await decideOk(a, { agent_id: agentId, action: 'reports.read' })).toMatchObject({
          effect: 'allow',
          policy_id: 'pol_calls_3',
        });
      // A knows at once.
      expect(await decideOk(a, list)).toMatchObject({
        effect: 'deny',
        reason: 'budget.exceeded',
        policy_id: 'pol_calls_3',
      });
      // B learns through NOTIFY (its periodic reload is an hour away): poll until it denies.
      await expect
        .poll(async () => (await decideOk(b, list)).reason, { timeout: 15_000, interval: 50 })
        .toBe('budget.exceeded');
      expect(await decideOk(b, list)).toMatchObject({
        effect: 'deny',
        reason: 'budget.exceeded',
        policy_id: 'pol_calls_3',
        status: 'denied',
        permit_token: null,
      });
      expect(await decideOk(b, { agent_id: agentId, action: 'reports.read' })).toMatchObject({
        effect: 'deny',
        reason: 'budget.exceeded',
      });
      // Another agent is not affected.
      expect(await decideOk(b, { ...list, agent_id: agent('exhaust-other') })).toMatchObject({ effect: 'allow' });
      for (const server of [a, b]) {
        expect(await budgetsOf(server, agentId, 'pol_calls_3')).toEqual([
          expect.objectContaining({ policy_id: 'pol_calls_3', consumed: 3, limit: 3, status: 'exceeded' }),
        ]);
      }
    },
    TEST_TIMEOUT,
  );
});
