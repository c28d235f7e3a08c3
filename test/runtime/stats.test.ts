/**
 * The dashboard overview's figures on both stores: GET /v1/stats/decisions
 * (decisions per minute by effect over the last minutes, zeros included, the
 * agents and actions denied most; counted in SQL on the service clock's
 * window) and GET /v1/stats/budgets (the budgets nearest their limits); scopes,
 * bounds, and another account's decisions never counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, START, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { decide as kitDecide } from '../helpers/kit.js';

for (const kind of STORE_KINDS) {
  describe(`overview figures (${kind})`, () => {
    let rt: TestRuntime;

    const decide = (agent: string, action: string, key?: string, amount?: number) =>
      kitDecide(rt, { agent_id: agent, action, ...(amount === undefined ? {} : { amount }) }, key);

    beforeAll(async () => {
      rt = await startRuntime(kind);
      await rt.setPolicies([
        { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
        { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
        { id: 'pol_refund', effect: 'review', actions: ['payments.refund'] },
        {
          id: 'pol_calls',
          effect: 'allow',
          actions: ['tools.run'],
          budget: { unit: 'calls', limit: 4, period: 'daily' },
        },
        {
          id: 'pol_usd',
          effect: 'allow',
          actions: ['payments.charge'],
          budget: { unit: 'USD', limit: 100, period: 'daily' },
        },
      ]);
      await rt.setPolicies([{ id: 'pol_other', effect: 'deny', actions: ['orders.delete'] }], 'live');
    });
    afterAll(() => rt?.close());

    it('counts decisions per minute and effect, with the agents and actions denied most', async () => {
      // Minute 10:00: 3 allow, 3 deny (2 by bot-a); minute 10:01: 1 review, 1 deny (by bot-b).
      for (const agent of ['bot-a', 'bot-b', 'bot-c']) await decide(agent, 'orders.read');
      await decide('bot-a', 'orders.delete');
      await decide('bot-a', 'orders.delete');
      await decide('bot-b', 'files.write'); // no policy: deny policy.not_found
      rt.clock.advance(75);
      await decide('bot-c', 'payments.refund');
      await decide('bot-b', 'orders.delete');
      // Not counted: the live environment.
      await decide('bot-z', 'orders.delete', rt.liveKey);

      const stats = await rt.getOk('/v1/stats/decisions?minutes=5');
      const now = START + 75_000;
      expect(stats).toMatchObject({
        object: 'decision_stats',
        minutes: 5,
        since: new Date(START + 60_000 - 4 * 60_000).toISOString(),
        until: new Date(now).toISOString(),
        totals: { allow: 3, deny: 4, review: 1 },
        livemode: false,
      });
      expect(stats.per_minute).toEqual([
        { minute: '2026-11-21T09:57:00.000Z', allow: 0, deny: 0, review: 0 },
        { minute: '2026-11-21T09:58:00.000Z', allow: 0, deny: 0, review: 0 },
        { minute: '2026-11-21T09:59:00.000Z', allow: 0, deny: 0, review: 0 },
        { minute: '2026-11-21T10:00:00.000Z', allow: 3, deny: 3, review: 0 },
        { minute: '2026-11-21T10:01:00.000Z', allow: 0, deny: 1, review: 1 },
      ]);
      expect(stats.top_denied_agents).toEqual([
        { agent_id: 'bot-a', count: 2 },
        { agent_id: 'bot-b', count: 2 },
      ]);
      expect(stats.top_denied_actions).toEqual([
        { action: 'orders.delete', count: 3 },
        { action: 'files.write', count: 1 },
      ]);
      expect((await rt.getOk('/v1/stats/decisions?minutes=5&top=1')).top_denied_actions).toEqual([
        { action: 'orders.delete', count: 3 },
      ]);
      // The default window is an hour; a minute-long one holds the current minute only.
      expect((await rt.getOk('/v1/stats/decisions')).per_minute).toHaveLength(60);
      expect((await rt.getOk('/v1/stats/decisions?minutes=1')).totals).toEqual({ allow: 0, deny: 1, review: 1 });
      const live = await rt.getOk('/v1/stats/decisions?minutes=5', rt.liveKey);
      expect(live).toMatchObject({ totals: { allow: 0, deny: 1, review: 0 }, livemode: true });
      expect((await rt.getOk('/v1/stats/decisions', rt.otherKey)).totals).toEqual({ allow: 0, deny: 0, review: 0 });
    });

    it('refuses windows outside 1..1440 minutes, and needs decisions:read', async () => {
      for (const q of ['minutes=0', 'minutes=1441', 'minutes=ten', 'top=0', 'other=1']) {
        const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/stats/decisions?${q}` });
        expect([r.statusCode, json(r).error.code], q).toEqual([400, 'validation.invalid_field']);
      }
      const budgetsOnly = await rt.keyWith(['budgets:read']);
      expect((await rt.call(budgetsOnly, { method: 'GET', url: '/v1/stats/decisions' })).statusCode).toBe(403);
      expect((await rt.call(budgetsOnly, { method: 'GET', url: '/v1/stats/budgets' })).statusCode).toBe(200);
      const decisionsOnly = await rt.keyWith(['decisions:read']);
      expect((await rt.call(decisionsOnly, { method: 'GET', url: '/v1/stats/budgets' })).statusCode).toBe(403);
    });

    it('lists the budgets nearest their limits first', async () => {
      for (let i = 0; i < 3; i++) await decide('budget-a', 'tools.run'); // 3 of 4 calls: 0.75
      await decide('budget-b', 'tools.run'); // 1 of 4: 0.25
      await decide('budget-a', 'payments.charge', undefined, 50); // 50 of 100 held: 0.5
      const near = await rt.getOk('/v1/stats/budgets?limit=2');
      expect(near).toMatchObject({ object: 'list', has_more: false });
      expect(near.data.map((b: JsonObject) => [b.policy_id, b.agent_id, b.used_fraction])).toEqual([
        ['pol_calls', 'budget-a', 0.75],
        ['pol_usd', 'budget-a', 0.5],
      ]);
      expect(near.data[0]).toMatchObject({ object: 'budget', unit: 'calls', limit: 4, consumed: 3, held: 0 });
      expect((await rt.getOk('/v1/stats/budgets')).data).toHaveLength(3);
      expect((await rt.call(rt.testKey, { method: 'GET', url: '/v1/stats/budgets?limit=101' })).statusCode).toBe(400);
    });
  });
}
