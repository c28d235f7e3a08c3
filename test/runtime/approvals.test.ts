/**
 * Approval before the action, on both stores (docs/reviews.md#the-rules): a review policy with `approval: { required: true }` answers
 * awaiting_approval without a permit and with approval_expires_at; confirm and
 * reject are 409 decision.not_pending meanwhile and POST .../permit is 409
 * decision.awaiting_approval; approved, the decision is pending with expires_at
 * = approval time + ttl_seconds and POST .../permit signs a fresh token each
 * call; denied or timed out it is deny review.denied / review.timeout, already
 * on the first read after the deadline (service clock) and fired once, by a
 * read or by the sweep. GET /v1/decisions/:id?wait= answers at once when there
 * is nothing to wait for, holds while awaiting and answers when a verdict comes
 * (the test holds the request and watches it), and refuses waits outside 1..60.
 * AuthZEN answers false while awaiting; an idempotent replay carries no permit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EventItem, type ListedItem, decide as kitDecide } from '../helpers/kit.js';

const TIMEOUT = 600;

for (const kind of STORE_KINDS) {
  describe(`approval before the action (${kind})`, () => {
    let rt: TestRuntime;
    let reviewerKey: string;
    let n = 0;

    const decide = (extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
      kitDecide(
        rt,
        { agent_id: `approval-bot-${++n}`, action: 'payments.refund', ttl_seconds: 120, ...extra },
        rt.testKey,
        headers,
      );
    const review = (id: string, verdict: 'approve' | 'deny', note?: string) =>
      rt.call(reviewerKey, {
        method: 'POST',
        url: `/v1/decisions/${id}/review`,
        payload: { verdict, reviewer: 'alice', ...(note ? { note } : {}) },
      });
    const permit = (id: string) => rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${id}/permit` });
    const errorOf = (r: { statusCode: number; body: string }) => [r.statusCode, json(r as never).error?.code];
    const reviewedEvents = async (id: string) =>
      (await rt.getOk('/v1/events?type=decision.reviewed&limit=100')).data.filter(
        (e: EventItem) => e.data.decision.id === id,
      );

    beforeAll(async () => {
      rt = await startRuntime(kind);
      reviewerKey = await rt.keyWith(['reviews:read', 'reviews:write']);
      await rt.setPolicies([
        {
          id: 'pol_refund_approval',
          name: 'refunds-approved-first',
          effect: 'review',
          actions: ['payments.refund'],
          approval: { required: true, timeout_seconds: TIMEOUT },
        },
        {
          id: 'pol_default_timeout',
          name: 'wires-approved-first',
          effect: 'review',
          actions: ['payments.wire'],
          approval: { required: true },
        },
        {
          id: 'pol_after',
          name: 'reviewed-after',
          effect: 'review',
          actions: ['orders.cancel'],
          approval: { required: false },
        },
      ]);
    });
    afterAll(() => rt?.close());

    it('answers awaiting_approval without a permit, until approval_expires_at', async () => {
      const d = await decide();
      const deadline = new Date(rt.clock.now() + TIMEOUT * 1000).toISOString();
      expect(d).toMatchObject({
        effect: 'review',
        reason: 'policy.matched',
        status: 'awaiting_approval',
        permit_token: null,
        approval_expires_at: deadline,
        expires_at: deadline,
      });
      expect(d.review).toEqual({ status: 'open', reviewer: null, note: null, reviewed_at: null });
      const wire = await decide({ action: 'payments.wire' });
      expect(wire.approval_expires_at).toBe(new Date(rt.clock.now() + 900_000).toISOString());
      // approval: { required: false } is a review after the fact.
      const after = await decide({ action: 'orders.cancel' });
      expect(after).toMatchObject({ status: 'pending', approval_expires_at: null });
      expect(typeof after.permit_token).toBe('string');
      const events = (await rt.getOk('/v1/events?type=decision.review')).data.filter(
        (e: EventItem) => e.data.decision.id === d.id,
      );
      expect(events[0].data.decision).toMatchObject({
        status: 'awaiting_approval',
        approval_expires_at: deadline,
        review: { status: 'open' },
      });
    });

    it('the policy API takes approval, refuses bad ones and warns about one on a non-review policy', async () => {
      const body = {
        name: 'approve-exports',
        effect: 'review',
        actions: ['data.export'],
        approval: { required: true, timeout_seconds: 60 },
      };
      const created = await rt.call(rt.testKey, { method: 'POST', url: '/v1/policies', payload: body });
      expect(created.statusCode, created.body).toBe(201);
      expect(json(created).approval).toEqual({ required: true, timeout_seconds: 60 });
      const bad = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/policies',
        payload: { ...body, name: 'x', approval: { required: true, timeout_seconds: 0 } },
      });
      expect([bad.statusCode, json(bad).error.code, json(bad).error.details[0].path]).toEqual([
        400,
        'validation.invalid_policy',
        '/approval/timeout_seconds',
      ]);
      const checked = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/policies/validate',
          payload: { ...body, name: 'y', effect: 'allow', actions: ['data.audit'] },
        }),
      );
      expect(checked).toMatchObject({
        valid: true,
        diagnostics: [{ severity: 'warning', code: 'lint.approval_ignored' }],
      });
      expect(checked.diagnostics).toHaveLength(1);
      // An allow policy with an approval allows at once: approval is for review policies.
      await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/policies/${json(created).id}` });
      const allowed = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/policies',
        payload: { ...body, name: 'y', effect: 'allow' },
      });
      expect(allowed.statusCode).toBe(201);
      expect(await decide({ action: 'data.export' })).toMatchObject({
        effect: 'allow',
        status: 'pending',
        approval_expires_at: null,
        review: null,
      });
      await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/policies/${json(allowed).id}` });
    });

    it('refuses confirm, reject and the permit while awaiting', async () => {
      const d = await decide();
      expect(errorOf(await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/confirm` }))).toEqual([
        409,
        'decision.not_pending',
      ]);
      expect(errorOf(await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/reject` }))).toEqual([
        409,
        'decision.not_pending',
      ]);
      expect(errorOf(await permit(d.id))).toEqual([409, 'decision.awaiting_approval']);
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).status).toBe('awaiting_approval');
    });

    it('approved: pending, expires_at = approval time + ttl_seconds, a fresh permit each call', async () => {
      const d = await decide();
      rt.clock.advance(30);
      const r = await review(d.id, 'approve', 'customer confirmed by phone');
      expect(r.statusCode, r.body).toBe(200);
      const approvedAt = rt.clock.now();
      expect(json(r)).toMatchObject({
        status: 'pending',
        effect: 'review',
        permit_token: null,
        expires_at: new Date(approvedAt + 120_000).toISOString(),
        approval_expires_at: d.approval_expires_at,
        review: {
          status: 'approved',
          reviewer: 'alice',
          note: 'customer confirmed by phone',
          reviewed_at: new Date(approvedAt).toISOString(),
        },
      });
      const first = json(await permit(d.id));
      const second = json(await permit(d.id));
      expect(first.object).toBe('permit');
      expect(first.permit_token).toMatch(/^eyJ/);
      expect(second.permit_token).not.toBe(first.permit_token);
      const verified = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/permits/verify',
          payload: { token: first.permit_token },
        }),
      );
      expect(verified).toMatchObject({
        valid: true,
        claims: { dec: d.id, eff: 'review', exp: Math.floor((approvedAt + 120_000) / 1000) },
      });
      // The permit is a decisions:write operation.
      const reader = await rt.keyWith(['decisions:read']);
      expect((await rt.call(reader, { method: 'POST', url: `/v1/decisions/${d.id}/permit` })).statusCode).toBe(403);
      expect(json(await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/confirm` }))).toMatchObject({
        status: 'confirmed',
      });
      expect(errorOf(await permit(d.id))).toEqual([409, 'decision.not_pending']);
      const events = await reviewedEvents(d.id);
      expect(events).toHaveLength(1);
      expect(events[0].data.decision).toMatchObject({ status: 'pending', review: { status: 'approved' } });
    });

    it('an approved decision past its new expiry has no permit (410) and is expired', async () => {
      const d = await decide();
      expect((await review(d.id, 'approve')).statusCode).toBe(200);
      rt.clock.advance(121);
      expect(errorOf(await permit(d.id))).toEqual([410, 'decision.expired']);
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).status).toBe('expired');
    });

    it('denied: deny review.denied, status denied, no permit', async () => {
      const d = await decide();
      const r = await review(d.id, 'deny', 'not for this customer');
      expect(json(r)).toMatchObject({
        effect: 'deny',
        reason: 'review.denied',
        status: 'denied',
        permit_token: null,
        review: { status: 'denied', note: 'not for this customer' },
      });
      expect(errorOf(await permit(d.id))).toEqual([409, 'decision.not_pending']);
      expect(errorOf(await review(d.id, 'approve'))).toEqual([409, 'decision.already_reviewed']);
      expect(
        (await rt.getOk('/v1/decisions?effect=deny&reason=review.denied')).data.map((x: ListedItem) => x.id),
      ).toContain(d.id);
      expect(await reviewedEvents(d.id)).toHaveLength(1);
    });

    it('not reviewed by approval_expires_at: the next read already shows deny review.timeout, fired once', async () => {
      const d = await decide();
      rt.clock.advance(TIMEOUT - 1);
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).status).toBe('awaiting_approval');
      rt.clock.advance(1);
      const read = await rt.getOk(`/v1/decisions/${d.id}`);
      expect(read).toMatchObject({
        effect: 'deny',
        reason: 'review.timeout',
        status: 'denied',
        review: { status: 'denied', reviewer: null, note: null, reviewed_at: d.approval_expires_at },
      });
      expect(await rt.getOk(`/v1/decisions/${d.id}`)).toEqual(read);
      // The sweep finds nothing more to do for it (other tests' decisions may be due too).
      await rt.services.approvals.timeOutOverdue();
      const events = await reviewedEvents(d.id);
      expect(events).toHaveLength(1);
      expect(events[0].data.decision).toMatchObject({ reason: 'review.timeout', status: 'denied' });
      expect(errorOf(await review(d.id, 'approve'))).toEqual([409, 'decision.already_reviewed']);
    });

    it('the sweep times out approvals nobody reads, and a verdict after the deadline finds it timed out', async () => {
      const unread = await decide();
      const late = await decide();
      rt.clock.advance(TIMEOUT);
      // Both, and whatever earlier tests left waiting.
      expect(await rt.services.approvals.timeOutOverdue()).toBeGreaterThanOrEqual(2);
      expect(await rt.services.approvals.timeOutOverdue()).toBe(0);
      expect(await reviewedEvents(unread.id)).toHaveLength(1);
      const [row] = await rt.store.sql<
        Array<{ reason: string; status: string }>
      >`select reason, status from decisions where id = ${unread.id}`;
      expect(row).toEqual({ reason: 'review.timeout', status: 'denied' });
      const refused = await review(late.id, 'approve');
      expect(errorOf(refused)).toEqual([409, 'decision.already_reviewed']);
      expect(json(refused).error.message).toContain('timed out');

      // A verdict that comes first on an overdue decision times it out (kept), then refuses.
      const third = await decide();
      rt.clock.advance(TIMEOUT);
      expect(errorOf(await review(third.id, 'approve'))).toEqual([409, 'decision.already_reviewed']);
      expect((await rt.getOk(`/v1/decisions/${third.id}`)).reason).toBe('review.timeout');
      expect(await reviewedEvents(third.id)).toHaveLength(1);
      // GET /v1/reviews and GET /v1/decisions list them denied.
      const fourth = await decide();
      rt.clock.advance(TIMEOUT);
      expect(
        (await rt.getOk('/v1/reviews?status=denied')).data.find((x: ListedItem) => x.id === fourth.id),
      ).toMatchObject({ reason: 'review.timeout' });
      // And the export.
      const fifth = await decide();
      rt.clock.advance(TIMEOUT);
      const exported = await rt.call(rt.testKey, {
        method: 'GET',
        url: `/v1/decisions/export?since=${encodeURIComponent(fifth.evaluated_at)}`,
      });
      const line = exported.body
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((d) => d.id === fifth.id);
      expect(line).toMatchObject({ status: 'denied', reason: 'review.timeout' });
    });

    it('GET ?wait= answers at once when not awaiting, and refuses waits outside 1..60', async () => {
      const allowlike = await decide({ action: 'orders.cancel' });
      expect((await rt.getOk(`/v1/decisions/${allowlike.id}?wait=60`)).status).toBe('pending');
      const d = await decide();
      for (const wait of ['61', '0', '-1', 'soon', '1.5']) {
        const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}?wait=${wait}` });
        expect(errorOf(r), wait).toEqual([400, 'validation.invalid_field']);
      }
      expect(errorOf(await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions/dec_missing?wait=5' }))).toEqual([
        404,
        'decision.not_found',
      ]);
      expect(rt.services.reviewWaiters.size).toBe(0);
    });

    it('a held GET ?wait= answers when a reviewer approves, and another when one denies', async () => {
      for (const verdict of ['approve', 'deny'] as const) {
        const d = await decide();
        const held = rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}?wait=30` });
        let answered = false;
        void held.then(() => (answered = true));
        await expect.poll(() => rt.services.reviewWaiters.size, { timeout: 5_000 }).toBe(1);
        expect(answered).toBe(false);
        expect((await review(d.id, verdict)).statusCode).toBe(200);
        const r = await held;
        expect(r.statusCode).toBe(200);
        expect(json(r)).toMatchObject(
          verdict === 'approve'
            ? { status: 'pending', review: { status: 'approved' } }
            : { status: 'denied', reason: 'review.denied' },
        );
        expect(rt.services.reviewWaiters.size).toBe(0);
      }
    });

    it('a held GET ?wait= answers when the sweep times the approval out, and when its wait ends', async () => {
      const d = await decide();
      const held = rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}?wait=30` });
      await expect.poll(() => rt.services.reviewWaiters.size, { timeout: 5_000 }).toBe(1);
      rt.clock.advance(TIMEOUT);
      expect(await rt.services.approvals.timeOutOverdue()).toBeGreaterThanOrEqual(1);
      expect(json(await held)).toMatchObject({ status: 'denied', reason: 'review.timeout' });

      const e = await decide();
      const short = json(await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${e.id}?wait=1` }));
      expect(short).toMatchObject({ id: e.id, status: 'awaiting_approval' });
      expect(rt.services.reviewWaiters.size).toBe(0);
    });

    it('AuthZEN answers false while awaiting approval; an idempotent replay carries no permit', async () => {
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/access/v1/evaluation',
        payload: {
          subject: { type: 'agent', id: 'authzen-approval-bot' },
          action: { name: 'payments.refund' },
          resource: { type: 'order', id: '1' },
        },
      });
      expect(r.statusCode, r.body).toBe(200);
      expect(json(r)).toMatchObject({ decision: false, context: { effect: 'review', status: 'awaiting_approval' } });
      expect(json(r).context.permit_token).toBeUndefined();

      const headers = { 'idempotency-key': `approval-replay-${kind}` };
      const first = await decide({ agent_id: 'replay-bot' }, headers);
      const again = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        headers,
        payload: { agent_id: 'replay-bot', action: 'payments.refund', ttl_seconds: 120 },
      });
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(json(again)).toMatchObject({ id: first.id, status: 'awaiting_approval', permit_token: null });
      // The permit route stores no token either: a replay signs a fresh one.
      expect((await review(first.id, 'approve')).statusCode).toBe(200);
      const key = { 'idempotency-key': `permit-replay-${kind}` };
      const p1 = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${first.id}/permit`, headers: key });
      const p2 = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${first.id}/permit`, headers: key });
      expect(p2.headers['idempotent-replayed']).toBe('true');
      expect(json(p2).permit_token).toMatch(/^eyJ/);
      expect(json(p2).permit_token).not.toBe(json(p1).permit_token);
      const stored = await rt.store.sql<
        Array<{ body: string | null }>
      >`select body from idempotency_keys where idempotency_key = ${key['idempotency-key']}`;
      expect(stored).toHaveLength(1);
      expect(stored[0]!.body).not.toContain('eyJ');
    });
  });
}
