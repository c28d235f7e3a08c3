/**
 * Budgets of decisions that await approval, on both stores: a `calls` budget
 * is not consumed while a decision waits, is consumed once on approval (never
 * again on confirm), and not at all when the decision is denied or times out;
 * a fiat budget's hold is placed at decision time, released on denial and on
 * timeout (by the review, not left to expire), kept past the approval (its
 * expiry moved to the decision's new one) and consumed on confirm. A calls
 * budget that filled up meanwhile turns an approval into deny budget.exceeded
 * (the review still recorded), and a full one denies at decision time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EventItem, type ListedItem, decide as kitDecide } from '../helpers/kit.js';

const TIMEOUT = 300;

for (const kind of STORE_KINDS) {
  describe(`budgets under approval (${kind})`, () => {
    let rt: TestRuntime;
    let reviewerKey: string;

    const decide = (agent: string, action: string, amount?: number) =>
      kitDecide(rt, { agent_id: agent, action, ttl_seconds: 60, ...(amount === undefined ? {} : { amount }) });
    const review = async (id: string, verdict: 'approve' | 'deny') => {
      const r = await rt.call(reviewerKey, {
        method: 'POST',
        url: `/v1/decisions/${id}/review`,
        payload: { verdict, reviewer: 'budget-reviewer' },
      });
      expect(r.statusCode, r.body).toBe(200);
      return json(r);
    };
    const usage = async (agent: string, policyId: string) => {
      const row = (await rt.getOk(`/v1/budgets?agent_id=${agent}`)).data.find(
        (b: ListedItem) => b.policy_id === policyId,
      );
      return { consumed: row.consumed as number, held: row.held as number };
    };
    const holdOf = async (decisionId: string) => {
      const [row] = await rt.store.sql<
        Array<{ status: string; expires_at: Date }>
      >`select status, expires_at from budget_holds where decision_id = ${decisionId}`;
      return row;
    };

    beforeAll(async () => {
      rt = await startRuntime(kind);
      reviewerKey = await rt.keyWith(['reviews:write']);
      await rt.setPolicies([
        {
          id: 'pol_calls',
          name: 'calls-approved',
          effect: 'review',
          actions: ['tools.run'],
          budget: { unit: 'calls', limit: 2, period: 'daily' },
          approval: { required: true, timeout_seconds: TIMEOUT },
        },
        {
          id: 'pol_usd',
          name: 'usd-approved',
          effect: 'review',
          actions: ['payments.refund'],
          budget: { unit: 'USD', limit: 100, period: 'daily' },
          approval: { required: true, timeout_seconds: TIMEOUT },
        },
        {
          id: 'pol_one',
          name: 'one-call',
          effect: 'review',
          actions: ['deploy.run'],
          budget: { unit: 'calls', limit: 1, period: 'daily' },
          approval: { required: true, timeout_seconds: TIMEOUT },
        },
      ]);
    });
    afterAll(() => rt?.close());

    it('a calls budget: nothing while waiting, one on approval (not again on confirm), none on denial or timeout', async () => {
      const agent = 'calls-bot';
      const d1 = await decide(agent, 'tools.run');
      expect(d1.status).toBe('awaiting_approval');
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 0, held: 0 });
      await review(d1.id, 'approve');
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 1, held: 0 });
      expect(json(await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d1.id}/confirm` })).status).toBe(
        'confirmed',
      );
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 1, held: 0 });

      const d2 = await decide(agent, 'tools.run');
      await review(d2.id, 'deny');
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 1, held: 0 });

      const d3 = await decide(agent, 'tools.run');
      rt.clock.advance(TIMEOUT);
      expect((await rt.getOk(`/v1/decisions/${d3.id}`)).reason).toBe('review.timeout');
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 1, held: 0 });

      const d4 = await decide(agent, 'tools.run');
      await review(d4.id, 'approve');
      expect(json(await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d4.id}/confirm` })).status).toBe(
        'confirmed',
      );
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 2, held: 0 });
      // Used up: the next request is denied at once, nothing awaits.
      expect(await decide(agent, 'tools.run')).toMatchObject({
        effect: 'deny',
        reason: 'budget.exceeded',
        status: 'denied',
        review: null,
        approval_expires_at: null,
      });
      expect(await usage(agent, 'pol_calls')).toEqual({ consumed: 2, held: 0 });
    });

    it('a fiat budget: held at decision time, released on denial and timeout, kept past approval, consumed on confirm', async () => {
      const agent = 'usd-bot';
      const d1 = await decide(agent, 'payments.refund', 60);
      expect(await usage(agent, 'pol_usd')).toEqual({ consumed: 0, held: 60 });
      expect(await holdOf(d1.id)).toEqual({ status: 'held', expires_at: new Date(d1.approval_expires_at!) });
      // The hold counts: 60 + 50 would pass the limit.
      expect(await decide(agent, 'payments.refund', 50)).toMatchObject({ effect: 'deny', reason: 'budget.exceeded' });
      await review(d1.id, 'deny');
      expect(await usage(agent, 'pol_usd')).toEqual({ consumed: 0, held: 0 });
      expect((await holdOf(d1.id))!.status).toBe('released');

      const d2 = await decide(agent, 'payments.refund', 30);
      rt.clock.advance(TIMEOUT);
      expect(await rt.services.approvals.timeOutOverdue()).toBeGreaterThanOrEqual(1);
      // Released by the timeout itself, not expired by the budget sweep.
      expect((await holdOf(d2.id))!.status).toBe('released');
      expect(await usage(agent, 'pol_usd')).toEqual({ consumed: 0, held: 0 });

      const d3 = await decide(agent, 'payments.refund', 40);
      rt.clock.advance(100);
      const approved = await review(d3.id, 'approve');
      expect(await holdOf(d3.id)).toEqual({ status: 'held', expires_at: new Date(approved.expires_at) });
      expect(new Date(approved.expires_at).getTime()).toBe(rt.clock.now() + 60_000);
      expect(await usage(agent, 'pol_usd')).toEqual({ consumed: 0, held: 40 });
      // Past the original decision's TTL, still held: the approval moved its expiry.
      rt.clock.advance(59);
      await rt.maintenance.runOnce();
      expect(await usage(agent, 'pol_usd')).toEqual({ consumed: 0, held: 40 });
      expect(
        json(
          await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d3.id}/confirm`, payload: { amount: 35 } }),
        ).status,
      ).toBe('confirmed');
      expect(await usage(agent, 'pol_usd')).toEqual({ consumed: 35, held: 0 });
    });

    it('an approval finding its calls budget filled meanwhile becomes deny budget.exceeded, the review kept', async () => {
      const agent = 'one-call-bot';
      // Both pass the check at decision time: nothing is consumed while they wait.
      const first = await decide(agent, 'deploy.run');
      const second = await decide(agent, 'deploy.run');
      expect([first.status, second.status]).toEqual(['awaiting_approval', 'awaiting_approval']);
      await review(first.id, 'approve');
      const late = await review(second.id, 'approve');
      expect(late).toMatchObject({
        effect: 'deny',
        reason: 'budget.exceeded',
        policy_id: 'pol_one',
        status: 'denied',
        review: { status: 'approved' },
      });
      expect(await usage(agent, 'pol_one')).toEqual({ consumed: 1, held: 0 });
      const events = (await rt.getOk('/v1/events?type=decision.reviewed&limit=100')).data.filter(
        (e: EventItem) => e.data.decision.id === second.id,
      );
      expect(events).toHaveLength(1);
      expect(events[0].data.decision).toMatchObject({ effect: 'deny', reason: 'budget.exceeded' });
      // The budget is exhausted now: the agent's next request is denied at once.
      expect(await decide(agent, 'deploy.run')).toMatchObject({ effect: 'deny', reason: 'budget.exceeded' });
    });
  });
}
