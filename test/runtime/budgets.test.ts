/**
 * Budgets over HTTP on both stores (docs/budgets-and-limits.md#budgets; docs/policies.md#how-a-request-is-decided): calls budgets consumed at decision time, fiat holds
 * confirmed, rejected or expired, threshold and exceeded events once per period,
 * the agent blocked until the period resets, UTC period boundaries on the
 * service clock, and GET /v1/budgets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetPeriod, Policy } from '../../compiler/policy/types.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { agent, postDecision } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** A fresh agent id per call, so tests never share rows. */

type PolicyInput = Partial<Policy> & Pick<Policy, 'effect' | 'actions'>;

describe.each(STORE_KINDS)('budgets (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  const decideOk = async (body: Record<string, unknown>) => {
    const r = await postDecision(rt, body);
    expect(r.statusCode, r.body).toBe(200);
    return json(r);
  };
  const resolve = (id: string, verb: 'confirm' | 'reject', body?: object) =>
    rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${id}/${verb}`, ...(body ? { payload: body } : {}) });
  const budgetsOf = async (agentId: string) =>
    (await rt.getOk(`/v1/budgets?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>;
  const budgetEvents = async (agentId: string) =>
    (
      [
        ...(await rt.getOk('/v1/events?type=budget.threshold&limit=100')).data,
        ...(await rt.getOk('/v1/events?type=budget.exceeded&limit=100')).data,
      ] as Array<JsonObject>
    )
      .filter((e) => e.data.agent_id === agentId)
      .sort((a, b) =>
        a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.type === 'budget.threshold' ? -1 : 1,
      );
  const warningCodes = (d: JsonObject) => (d.metadata.warnings as Array<{ code: string }>).map((w) => w.code);
  const install = (policies: PolicyInput[]) => rt.setPolicies(policies);

  describe('calls budgets', () => {
    it('consume one per allowed decision; threshold then exceeded fire once; the agent is then denied everything until the period resets', async () => {
      await install([
        {
          id: 'pol_calls',
          effect: 'allow',
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 5, period: 'daily', threshold_alert: 0.6 },
        },
        { id: 'pol_free', effect: 'allow', actions: ['orders.list'] },
      ]);
      const a = agent('calls');
      const seen: Array<JsonObject> = [];
      for (let i = 1; i <= 5; i++) seen.push(await decideOk({ agent_id: a, action: 'orders.read' }));
      expect(seen.map((d) => d.effect)).toEqual(['allow', 'allow', 'allow', 'allow', 'allow']);
      // Past the threshold (3 of 5 = 60%) but under the limit, allowed decisions carry the
      // informational warning; the decision that reaches the limit does not (the budget is exceeded).
      expect(seen.map((d) => warningCodes(d).includes('budget.below_threshold'))).toEqual([
        false,
        false,
        true,
        true,
        false,
      ]);

      const events = await budgetEvents(a);
      expect(events.map((e) => e.type)).toEqual(['budget.threshold', 'budget.exceeded']);
      const common = {
        agent_id: a,
        policy_id: 'pol_calls',
        budget_unit: 'calls',
        budget_limit: 5,
        threshold_pct: 0.6,
        period: 'daily',
        period_resets_at: '2026-11-22T00:00:00.000Z',
        scope: 'agent',
      };
      expect(events[0]!.data).toEqual({ ...common, budget_consumed: 3, reason: 'budget.below_threshold' });
      expect(events[1]!.data).toEqual({ ...common, budget_consumed: 5, reason: 'budget.exceeded' });

      // Exhausted: every decision for the agent is denied, even under another policy.
      for (const action of ['orders.read', 'orders.list']) {
        const d = await decideOk({ agent_id: a, action });
        expect(d).toMatchObject({
          effect: 'deny',
          reason: 'budget.exceeded',
          status: 'denied',
          permit_token: null,
          policy_id: 'pol_calls',
        });
      }
      // Another agent has its own accounting.
      expect((await decideOk({ agent_id: agent('calls-other'), action: 'orders.read' })).effect).toBe('allow');
      // Denied decisions consume nothing and fire nothing more.
      expect(await budgetsOf(a)).toEqual([
        expect.objectContaining({
          policy_id: 'pol_calls',
          agent_id: a,
          unit: 'calls',
          limit: 5,
          consumed: 5,
          held: 0,
          period: 'daily',
          status: 'exceeded',
        }),
      ]);
      expect((await budgetEvents(a)).length).toBe(2);

      // The period resets at midnight UTC.
      rt.clock.set(Date.parse('2026-11-22T00:00:00.000Z') - 1);
      expect((await decideOk({ agent_id: a, action: 'orders.list' })).reason).toBe('budget.exceeded');
      rt.clock.advance(0.001);
      const again = await decideOk({ agent_id: a, action: 'orders.read' });
      expect(again).toMatchObject({ effect: 'allow', reason: 'policy.matched' });
      expect(await budgetsOf(a)).toEqual([
        expect.objectContaining({ consumed: 1, status: 'ok', period_resets_at: '2026-11-23T00:00:00.000Z' }),
      ]);
      // The new period fires its own threshold event when crossed again.
      await decideOk({ agent_id: a, action: 'orders.read' });
      await decideOk({ agent_id: a, action: 'orders.read' });
      const after = await budgetEvents(a);
      expect(after.map((e) => [e.type, e.data.period_resets_at])).toEqual([
        ['budget.threshold', '2026-11-22T00:00:00.000Z'],
        ['budget.exceeded', '2026-11-22T00:00:00.000Z'],
        ['budget.threshold', '2026-11-23T00:00:00.000Z'],
      ]);
    });

    it('the warning is for past the threshold and under the limit: not on the decision that reaches the limit', async () => {
      await install([
        {
          id: 'pol_one',
          effect: 'allow',
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 1, period: 'daily', threshold_alert: 0.5 },
        },
        {
          id: 'pol_four',
          effect: 'allow',
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 4, period: 'daily', threshold_alert: 0.5 },
        },
      ]);
      const a = agent('limit-reached');
      // pol_one goes from 0 to its limit (past 50% and at 100% at once): no warning of its;
      // pol_four is at 1 of 4, under its threshold: none either.
      const first = await decideOk({ agent_id: a, action: 'orders.read' });
      expect(first.effect).toBe('allow');
      expect(first.metadata.warnings).toEqual([]);
      expect((await budgetsOf(a)).map((b) => [b.policy_id, b.status])).toEqual([
        ['pol_four', 'ok'],
        ['pol_one', 'exceeded'],
      ]);
    });

    it('deny and review: review consumes, a deny consumes nothing', async () => {
      await install([
        {
          id: 'pol_review',
          effect: 'review',
          actions: ['payments.refund'],
          budget: { unit: 'calls', limit: 2, period: 'hourly' },
        },
        {
          id: 'pol_deny',
          effect: 'deny',
          actions: ['orders.delete'],
          budget: { unit: 'calls', limit: 1, period: 'hourly' },
        },
      ]);
      const a = agent('review');
      for (let i = 0; i < 3; i++)
        expect((await decideOk({ agent_id: a, action: 'orders.delete' })).reason).toBe('policy.matched');
      expect((await decideOk({ agent_id: a, action: 'payments.refund' })).effect).toBe('review');
      const budgets = await budgetsOf(a);
      expect(budgets.find((b) => b.policy_id === 'pol_review')).toMatchObject({ consumed: 1, status: 'ok' });
      expect(budgets.find((b) => b.policy_id === 'pol_deny')).toMatchObject({ consumed: 0 });
    });

    it("every matching policy's budget applies, not only the winner's", async () => {
      await install([
        {
          id: 'pol_a_wide',
          priority: 10,
          effect: 'allow',
          actions: ['orders.*'],
          budget: { unit: 'calls', limit: 100, period: 'monthly' },
        },
        {
          id: 'pol_b_tight',
          priority: 50,
          effect: 'allow',
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 2, period: 'monthly' },
        },
      ]);
      const a = agent('both');
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).policy_id).toBe('pol_a_wide');
      await decideOk({ agent_id: a, action: 'orders.read' });
      // The tight budget is exhausted: the agent is blocked entirely.
      const d = await decideOk({ agent_id: a, action: 'orders.list' });
      expect(d).toMatchObject({ effect: 'deny', reason: 'budget.exceeded', policy_id: 'pol_b_tight' });
      const byPolicy = Object.fromEntries((await budgetsOf(a)).map((b) => [b.policy_id, b]));
      expect(byPolicy.pol_a_wide).toMatchObject({ consumed: 2, status: 'ok' });
      expect(byPolicy.pol_b_tight).toMatchObject({ consumed: 2, status: 'exceeded' });
    });

    it('raising the limit lifts the block; removing the budget does too', async () => {
      const policy: PolicyInput = {
        id: 'pol_raise',
        effect: 'allow',
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: 1, period: 'monthly' },
      };
      await install([policy]);
      const a = agent('raise');
      await decideOk({ agent_id: a, action: 'orders.read' });
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).reason).toBe('budget.exceeded');
      await install([{ ...policy, budget: { unit: 'calls', limit: 3, period: 'monthly' } }]);
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).effect).toBe('allow');
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ limit: 3, consumed: 2, status: 'ok' })]);
      await decideOk({ agent_id: a, action: 'orders.read' });
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).reason).toBe('budget.exceeded');
      const { budget: _budget, ...unbudgeted } = policy;
      await install([unbudgeted]);
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).effect).toBe('allow');
      expect(await budgetsOf(a)).toEqual([]);
    });
  });

  describe('fiat budgets', () => {
    const policy: PolicyInput = {
      id: 'pol_usd',
      effect: 'allow',
      actions: ['payments.charge'],
      budget: { unit: 'USD', limit: 100, period: 'monthly', threshold_alert: 0.5 },
    };

    it('need an amount: 400 validation.missing_field, nothing stored', async () => {
      await install([policy]);
      const a = agent('noamount');
      const r = await postDecision(rt, { agent_id: a, action: 'payments.charge' });
      expect(r.statusCode).toBe(400);
      expect(json(r).error.code).toBe('validation.missing_field');
      expect(json(r).error.message).toContain('pol_usd');
      expect((await rt.getOk(`/v1/decisions?agent_id=${a}`)).data).toEqual([]);
    });

    it('hold the amount; held + consumed never pass the limit; confirm consumes, reject releases', async () => {
      await install([policy]);
      const a = agent('usd');
      const first = await decideOk({ agent_id: a, action: 'payments.charge', amount: 60 });
      expect(first.effect).toBe('allow');
      expect(await budgetsOf(a)).toEqual([
        expect.objectContaining({ unit: 'USD', limit: 100, consumed: 0, held: 60, status: 'ok' }),
      ]);
      // 60 held + 50 > 100: denied, and the agent is not blocked (nothing consumed yet).
      const over = await decideOk({ agent_id: a, action: 'payments.charge', amount: 50 });
      expect(over).toMatchObject({
        effect: 'deny',
        reason: 'budget.exceeded',
        status: 'denied',
        policy_id: 'pol_usd',
        permit_token: null,
      });
      const second = await decideOk({ agent_id: a, action: 'payments.charge', amount: 40 });
      expect(second.effect).toBe('allow');
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 0, held: 100 })]);
      expect((await decideOk({ agent_id: a, action: 'payments.charge', amount: 0.01 })).reason).toBe('budget.exceeded');

      // Confirming more than was held is refused and changes nothing.
      const tooMuch = await resolve(first.id, 'confirm', { amount: 61 });
      expect(tooMuch.statusCode).toBe(400);
      expect(json(tooMuch).error.code).toBe('validation.invalid_field');
      expect((await rt.getOk(`/v1/decisions/${first.id}`)).status).toBe('pending');
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 0, held: 100 })]);

      // Confirm with a smaller amount: that amount is consumed, the rest of the hold is freed.
      expect((await resolve(first.id, 'confirm', { amount: 30 })).statusCode).toBe(200);
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 30, held: 40, status: 'ok' })]);
      expect((await resolve(second.id, 'reject')).statusCode).toBe(200);
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 30, held: 0 })]);
      expect(await budgetEvents(a)).toEqual([]);

      // Crossing 50% fires the threshold event at confirm time (consumption, not holds).
      const third = await decideOk({ agent_id: a, action: 'payments.charge', amount: 25.5 });
      expect(await budgetEvents(a)).toEqual([]);
      expect((await resolve(third.id, 'confirm')).statusCode).toBe(200);
      const [threshold] = await budgetEvents(a);
      expect(threshold).toMatchObject({ type: 'budget.threshold' });
      expect(threshold!.data).toEqual({
        agent_id: a,
        policy_id: 'pol_usd',
        budget_unit: 'USD',
        budget_limit: 100,
        budget_consumed: 55.5,
        threshold_pct: 0.5,
        period: 'monthly',
        period_resets_at: '2026-12-01T00:00:00.000Z',
        scope: 'agent',
        reason: 'budget.below_threshold',
      });
      const warned = await decideOk({ agent_id: a, action: 'payments.charge', amount: 44.5 });
      expect(warningCodes(warned)).toContain('budget.below_threshold');
      expect(await budgetsOf(a)).toEqual([
        expect.objectContaining({ consumed: 55.5, held: 44.5, status: 'threshold' }),
      ]);

      // Reaching the limit exactly: exceeded fires once, the agent is blocked.
      expect((await resolve(warned.id, 'confirm')).statusCode).toBe(200);
      const events = await budgetEvents(a);
      expect(events.map((e) => e.type)).toEqual(['budget.threshold', 'budget.exceeded']);
      expect(events[1]!.data).toMatchObject({ budget_consumed: 100, budget_limit: 100, reason: 'budget.exceeded' });
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 100, held: 0, status: 'exceeded' })]);
      expect((await decideOk({ agent_id: a, action: 'payments.charge', amount: 0 })).reason).toBe('budget.exceeded');
    });

    it('sums decimal amounts exactly (0.1 + 0.2 fits a limit of 0.3)', async () => {
      await install([{ ...policy, id: 'pol_cents', budget: { unit: 'EUR', limit: 0.3, period: 'monthly' } }]);
      const a = agent('cents');
      const x = await decideOk({ agent_id: a, action: 'payments.charge', amount: 0.1 });
      const y = await decideOk({ agent_id: a, action: 'payments.charge', amount: 0.2 });
      expect([x.effect, y.effect]).toEqual(['allow', 'allow']);
      await resolve(x.id, 'confirm');
      await resolve(y.id, 'confirm');
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 0.3, held: 0, status: 'exceeded' })]);
    });

    it('holds expire with their decision: released lazily at the next check and by the sweep', async () => {
      await install([policy]);
      const a = agent('expiry');
      const held = await decideOk({ agent_id: a, action: 'payments.charge', amount: 80, ttl_seconds: 60 });
      expect((await decideOk({ agent_id: a, action: 'payments.charge', amount: 30 })).reason).toBe('budget.exceeded');
      rt.clock.advance(59);
      expect((await decideOk({ agent_id: a, action: 'payments.charge', amount: 30 })).reason).toBe('budget.exceeded');
      rt.clock.advance(1); // exactly expires_at: the hold no longer counts
      expect((await decideOk({ agent_id: a, action: 'payments.charge', amount: 30, ttl_seconds: 10 })).effect).toBe(
        'allow',
      );
      expect((await resolve(held.id, 'confirm')).statusCode).toBe(410);

      // The sweep releases expired holds without any request for the budget.
      rt.clock.advance(11);
      const usageRow = async () =>
        (await rt.store.sql<Array<{ held: string }>>`select held::text from budget_usage where agent_id = ${a}`)[0]!
          .held;
      expect(Number(await usageRow())).toBe(30);
      await rt.maintenance.runOnce();
      expect(Number(await usageRow())).toBe(0);
      expect(await budgetsOf(a)).toEqual([expect.objectContaining({ consumed: 0, held: 0 })]);
    });
  });

  describe('GET /v1/budgets', () => {
    it("lists an agent's budgets (unused ones at zero) with the fields of docs/budgets-and-limits.md#get-v1budgets; needs budgets:read; isolated per tenant", async () => {
      await install([
        {
          id: 'pol_b1',
          effect: 'allow',
          agents: ['lister-*'],
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 10, period: 'weekly', threshold_alert: 0.8 },
        },
        {
          id: 'pol_b2',
          effect: 'allow',
          actions: ['payments.charge'],
          budget: { unit: 'USD', limit: 500, period: 'yearly' },
        },
        {
          id: 'pol_b3',
          effect: 'allow',
          agents: ['someone-else'],
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 1, period: 'daily' },
        },
        {
          id: 'pol_b4',
          state: 'disabled',
          effect: 'allow',
          actions: ['orders.read'],
          budget: { unit: 'calls', limit: 1, period: 'daily' },
        },
      ]);
      const a = agent('lister');
      await decideOk({ agent_id: a, action: 'orders.read' });
      const list = await rt.getOk(`/v1/budgets?agent_id=${a}`);
      expect(list).toMatchObject({ object: 'list', has_more: false, url: '/v1/budgets' });
      const now = rt.clock.now();
      const weekEnd = new Date(now);
      weekEnd.setUTCHours(0, 0, 0, 0);
      weekEnd.setUTCDate(weekEnd.getUTCDate() + ((8 - weekEnd.getUTCDay()) % 7 || 7));
      expect(list.data).toEqual([
        {
          object: 'budget',
          policy_id: 'pol_b1',
          agent_id: a,
          scope: 'agent',
          session_id: null,
          on_behalf_of: null,
          unit: 'calls',
          limit: 10,
          consumed: 1,
          held: 0,
          period: 'weekly',
          period_start: new Date(weekEnd.getTime() - 7 * 86_400_000).toISOString(),
          period_resets_at: weekEnd.toISOString(),
          threshold_alert: 0.8,
          status: 'ok',
          livemode: false,
        },
        expect.objectContaining({
          policy_id: 'pol_b2',
          agent_id: a,
          unit: 'USD',
          consumed: 0,
          held: 0,
          period: 'yearly',
          status: 'ok',
          threshold_alert: null,
        }),
      ]);
      // Pagination by `<policy_id>:<agent_id>`.
      const page1 = await rt.getOk(`/v1/budgets?agent_id=${a}&limit=1`);
      expect(page1.data.map((b: { policy_id: string }) => b.policy_id)).toEqual(['pol_b1']);
      expect(page1.has_more).toBe(true);
      const page2 = await rt.getOk(
        `/v1/budgets?agent_id=${a}&limit=1&starting_after=${encodeURIComponent(`pol_b1:${a}`)}`,
      );
      expect(page2.data.map((b: { policy_id: string }) => b.policy_id)).toEqual(['pol_b2']);
      expect(page2.has_more).toBe(false);
      // Without an agent: every (policy, agent) with accounting this period.
      const all = (await rt.getOk('/v1/budgets?limit=100')).data as Array<JsonObject>;
      expect(all.some((b) => b.policy_id === 'pol_b1' && b.agent_id === a && b.consumed === 1)).toBe(true);
      expect(all.every((b) => b.consumed > 0 || b.held > 0)).toBe(true);

      const noScope = await rt.keyWith(['decisions:read']);
      const r = await rt.call(noScope, { method: 'GET', url: `/v1/budgets?agent_id=${a}` });
      expect(r.statusCode).toBe(403);
      expect(json(r).error.code).toBe('auth.scope_insufficient');
      expect((await rt.getOk(`/v1/budgets?agent_id=${a}`, await rt.keyWith(['budgets:read']))).data).toHaveLength(2);
      // Another account and the live environment see nothing of it.
      expect((await rt.getOk(`/v1/budgets?agent_id=${a}`, rt.otherKey)).data).toEqual([]);
      expect((await rt.getOk('/v1/budgets?limit=100', rt.liveKey)).data).toEqual([]);
      const bad = await rt.call(rt.testKey, { method: 'GET', url: '/v1/budgets?limit=0' });
      expect(bad.statusCode).toBe(400);
    });
  });

  describe('period boundaries follow the service clock', () => {
    // Each case moves the clock forward only, to instants after every earlier test's.
    const cases: Array<{ name: string; period: BudgetPeriod; last: string; next: string }> = [
      {
        name: 'a week starts on Monday 00:00 UTC',
        period: 'weekly',
        last: '2026-11-29T23:59:59.999Z',
        next: '2026-11-30T00:00:00.000Z',
      },
      {
        name: 'a 31-day month ends',
        period: 'monthly',
        last: '2026-12-31T23:59:59.999Z',
        next: '2027-01-01T00:00:00.000Z',
      },
      { name: 'a year ends', period: 'yearly', last: '2027-12-31T23:59:59.999Z', next: '2028-01-01T00:00:00.000Z' },
      {
        name: 'February of a leap year has 29 days',
        period: 'monthly',
        last: '2028-02-29T23:59:59.999Z',
        next: '2028-03-01T00:00:00.000Z',
      },
      { name: 'an hour ends', period: 'hourly', last: '2028-03-01T10:59:59.999Z', next: '2028-03-01T11:00:00.000Z' },
    ];
    for (const c of cases) {
      it(`${c.name}: exhausted at ${c.last}, fresh at ${c.next}`, async () => {
        await install([
          {
            id: `pol_${c.period}`,
            effect: 'allow',
            actions: ['orders.read'],
            budget: { unit: 'calls', limit: 1, period: c.period },
          },
        ]);
        const a = agent(c.period);
        rt.clock.set(Date.parse(c.last) - 1000);
        expect((await decideOk({ agent_id: a, action: 'orders.read' })).effect).toBe('allow');
        rt.clock.set(Date.parse(c.last));
        expect((await decideOk({ agent_id: a, action: 'orders.read' })).reason).toBe('budget.exceeded');
        const [before] = await budgetsOf(a);
        expect(before).toMatchObject({ status: 'exceeded', period_resets_at: c.next });
        rt.clock.set(Date.parse(c.next));
        expect((await decideOk({ agent_id: a, action: 'orders.read' })).effect).toBe('allow');
        const [after] = await budgetsOf(a);
        expect(after).toMatchObject({ consumed: 1, status: 'exceeded', period_start: c.next });
        const exceeded = (await budgetEvents(a)).filter((e) => e.type === 'budget.exceeded');
        expect(exceeded.map((e) => e.data.period_resets_at)).toEqual([c.next, after!.period_resets_at]);
      });
    }
  });
});
