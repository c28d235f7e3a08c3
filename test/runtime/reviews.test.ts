/**
 * Human review on both stores (docs/reviews.md#the-rules): review
 * decisions carry `review` (null on allow and deny), the queue
 * (GET /v1/reviews: open oldest first, the others newest first, paged), a
 * verdict after the fact (POST /v1/decisions/:id/review) that records the
 * judgement and changes nothing else, its errors (404, 409 not_reviewable,
 * 403 self_review (the deciding key or any key of its rotation chain), 409 already_reviewed, validation), the new scopes (and the
 * operator API creating keys with them), decision.reviewed through the events
 * and webhooks (an endpoint on `*` gets it, one on another list does not), and
 * another account's ids answering 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotationChain } from '../../runtime/store/accounts.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EventItem, decide as kitDecide } from '../helpers/kit.js';

for (const kind of STORE_KINDS) {
  describe(`human review after the fact (${kind})`, () => {
    let rt: TestRuntime;
    /** The key agents decide with; reviews come from other keys. */
    let agentKey: string;
    let reviewerKey: string;
    let receiver: Receiver;
    let n = 0;
    const agent = () => `review-bot-${++n}`;

    const decide = (action: string, key = agentKey) => kitDecide(rt, { agent_id: agent(), action }, key);
    const review = (id: string, payload: Record<string, unknown>, key = reviewerKey) =>
      rt.call(key, { method: 'POST', url: `/v1/decisions/${id}/review`, payload });

    beforeAll(async () => {
      rt = await startRuntime(kind);
      agentKey = rt.testKey;
      reviewerKey = await rt.keyWith(['reviews:read', 'reviews:write']);
      await rt.setPolicies([
        { id: 'pol_refunds', name: 'refunds-reviewed', effect: 'review', actions: ['payments.refund'] },
        { id: 'pol_reads', name: 'reads', effect: 'allow', actions: ['orders.read'] },
        { id: 'pol_deletes', name: 'no-deletes', effect: 'deny', actions: ['orders.delete'] },
      ]);
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await rt?.close();
      await receiver?.close();
    });

    it('review decisions carry an open review and keep their permit; allow and deny carry none', async () => {
      const d = await decide('payments.refund');
      expect(d).toMatchObject({
        effect: 'review',
        status: 'pending',
        approval_expires_at: null,
        review: { status: 'open', reviewer: null, note: null, reviewed_at: null },
      });
      expect(typeof d.permit_token).toBe('string');
      expect((await decide('orders.read')).review).toBeNull();
      expect((await decide('orders.delete')).review).toBeNull();
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).review).toEqual({
        status: 'open',
        reviewer: null,
        note: null,
        reviewed_at: null,
      });
    });

    it('lists open reviews oldest first and the reviewed newest first, page by page', async () => {
      // The live environment's queue, which no other test uses.
      await rt.setPolicies([{ id: 'pol_live_review', effect: 'review', actions: ['payments.refund'] }], 'live');
      const made = [];
      for (let i = 0; i < 3; i++) {
        const r = await rt.call(rt.liveKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: `live-bot-${i}`, action: 'payments.refund' },
        });
        made.push(json(r).id as string);
      }
      const open = await rt.getOk('/v1/reviews', rt.liveKey);
      expect(open).toMatchObject({ object: 'list', has_more: false, url: '/v1/reviews' });
      expect(open.data.map((d: { id: string }) => d.id)).toEqual(made);
      const first = await rt.getOk('/v1/reviews?status=open&limit=2', rt.liveKey);
      expect(first.data.map((d: { id: string }) => d.id)).toEqual(made.slice(0, 2));
      expect(first.has_more).toBe(true);
      const next = await rt.getOk(`/v1/reviews?status=open&limit=2&starting_after=${made[1]}`, rt.liveKey);
      expect(next.data.map((d: { id: string }) => d.id)).toEqual([made[2]]);

      const liveReviewer = await rt.keyWith(['reviews:write', 'reviews:read'], 'live');
      for (const id of [made[0]!, made[2]!])
        expect((await review(id, { verdict: 'approve', reviewer: 'alice' }, liveReviewer)).statusCode).toBe(200);
      expect((await review(made[1]!, { verdict: 'deny', reviewer: 'bob', note: 'no' }, liveReviewer)).statusCode).toBe(
        200,
      );
      expect((await rt.getOk('/v1/reviews?status=approved', rt.liveKey)).data.map((d: { id: string }) => d.id)).toEqual(
        [made[2], made[0]],
      );
      const denied = await rt.getOk('/v1/reviews?status=denied', rt.liveKey);
      expect(denied.data.map((d: { id: string }) => d.id)).toEqual([made[1]]);
      expect((await rt.getOk('/v1/reviews', rt.liveKey)).data).toEqual([]);
      // The test environment's queue is another one.
      expect((await rt.getOk('/v1/reviews', rt.testKey)).data.every((d: { livemode: boolean }) => !d.livemode)).toBe(
        true,
      );
      expect((await rt.call(rt.liveKey, { method: 'GET', url: '/v1/reviews?status=closed' })).statusCode).toBe(400);
    });

    it('a verdict on a decision that did not wait records the judgement and changes nothing else', async () => {
      const d = await decide('payments.refund');
      rt.clock.advance(5);
      const r = await review(d.id, {
        verdict: 'deny',
        reviewer: 'alice@example.com',
        note: 'should not have refunded',
      });
      expect(r.statusCode, r.body).toBe(200);
      const after = json(r);
      expect(after).toMatchObject({
        id: d.id,
        effect: 'review',
        reason: 'policy.matched',
        status: 'pending',
        expires_at: d.expires_at,
        review: {
          status: 'denied',
          reviewer: 'alice@example.com',
          note: 'should not have refunded',
          reviewed_at: new Date(rt.clock.now()).toISOString(),
        },
      });
      // The agent's permit still stands; its confirm still works.
      const verified = json(
        await rt.call(rt.testKey, { method: 'POST', url: '/v1/permits/verify', payload: { token: d.permit_token } }),
      );
      expect(verified).toMatchObject({ valid: true });
      expect(json(await rt.call(agentKey, { method: 'POST', url: `/v1/decisions/${d.id}/confirm` }))).toMatchObject({
        status: 'confirmed',
      });
      // The reviewing key is stored for audit, and not answered.
      const [stored] = await rt.store.sql<
        Array<{ reviewer_key_id: string | null }>
      >`select reviewer_key_id from decisions where id = ${d.id}`;
      expect(stored!.reviewer_key_id).toMatch(/^key_/);
      expect(JSON.stringify(after)).not.toContain(stored!.reviewer_key_id!);
    });

    it('refuses what cannot be reviewed: 404, not reviewable, self review, already reviewed, bad bodies', async () => {
      const d = await decide('payments.refund');
      const allow = await decide('orders.read');
      const code = async (id: string, payload: Record<string, unknown>, key?: string) => {
        const r = await review(id, payload, key);
        return [r.statusCode, json(r).error?.code];
      };
      expect(await code('dec_nope', { verdict: 'approve', reviewer: 'a' })).toEqual([404, 'decision.not_found']);
      expect(await code(allow.id, { verdict: 'approve', reviewer: 'a' })).toEqual([409, 'decision.not_reviewable']);
      // The key that made the decision: an agent holding a * key cannot approve its own request.
      expect(await code(d.id, { verdict: 'approve', reviewer: 'me' }, agentKey)).toEqual([403, 'review.self_review']);
      expect(await code(d.id, { verdict: 'maybe', reviewer: 'a' })).toEqual([400, 'validation.invalid_field']);
      expect(await code(d.id, { verdict: 'approve' })).toEqual([400, 'validation.missing_field']);
      expect(await code(d.id, { verdict: 'approve', reviewer: '' })).toEqual([400, 'validation.invalid_field']);
      expect(await code(d.id, { verdict: 'approve', reviewer: 'a', extra: 1 })).toEqual([
        400,
        'validation.invalid_field',
      ]);
      expect(await code(d.id, { verdict: 'approve', reviewer: 'a', note: 'x'.repeat(2001) })).toEqual([
        400,
        'validation.invalid_field',
      ]);
      // None of that reviewed it.
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).review.status).toBe('open');
      expect(await code(d.id, { verdict: 'approve', reviewer: 'alice' })).toEqual([200, undefined]);
      expect(await code(d.id, { verdict: 'deny', reviewer: 'bob' })).toEqual([409, 'decision.already_reviewed']);
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).review).toMatchObject({ status: 'approved', reviewer: 'alice' });
    });

    it("a key of the deciding key's rotation chain (its successors, transitively) is the same reviewer: 403 review.self_review", async () => {
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const made = json(
        await rt.call(null, {
          method: 'POST',
          url: `/admin/accounts/${rt.accountId}/api-keys`,
          headers: admin,
          payload: { environment: 'test', scopes: ['*'] },
        }),
      );
      const rotate = async (id: string) => {
        const r = await rt.call(null, { method: 'POST', url: `/admin/api-keys/${id}/rotate`, headers: admin });
        expect(r.statusCode, r.body).toBe(201);
        return json(r) as { id: string; key: string };
      };
      const code = async (id: string, key: string) => {
        const r = await review(id, { verdict: 'approve', reviewer: 'me' }, key);
        return [r.statusCode, json(r).error?.code];
      };
      const first = await decide('payments.refund', made.key);
      const second = await rotate(made.id);
      expect(await code(first.id, second.key)).toEqual([403, 'review.self_review']);
      const bySecond = await decide('payments.refund', second.key);
      const third = await rotate(second.id);
      expect(await code(first.id, third.key)).toEqual([403, 'review.self_review']);
      expect(await code(bySecond.id, third.key)).toEqual([403, 'review.self_review']);
      expect((await rt.getOk(`/v1/decisions/${first.id}`)).review.status).toBe('open');
      // Another key of the account (its own chain) still reviews them.
      expect(await code(first.id, reviewerKey)).toEqual([200, undefined]);
      expect(await code(bySecond.id, reviewerKey)).toEqual([200, undefined]);
      // The chain is read both ways from any key of it.
      const chain = (id: string) => rotationChain(rt.store.sql, id).then((ids) => [...ids].sort());
      const all = [made.id, second.id, third.id].sort();
      expect(await chain(made.id)).toEqual(all);
      expect(await chain(second.id)).toEqual(all);
      expect(await chain(third.id)).toEqual(all);
    });

    it('needs reviews:read to list and reviews:write to review; the operator API creates keys with them', async () => {
      const d = await decide('payments.refund');
      const readOnly = await rt.keyWith(['reviews:read']);
      const decisionsOnly = await rt.keyWith(['decisions:read', 'decisions:write']);
      expect((await rt.call(readOnly, { method: 'GET', url: '/v1/reviews' })).statusCode).toBe(200);
      const refused = await review(d.id, { verdict: 'approve', reviewer: 'a' }, readOnly);
      expect([refused.statusCode, json(refused).error.code]).toEqual([403, 'auth.scope_insufficient']);
      expect((await rt.call(decisionsOnly, { method: 'GET', url: '/v1/reviews' })).statusCode).toBe(403);
      expect((await review(d.id, { verdict: 'approve', reviewer: 'a' }, decisionsOnly)).statusCode).toBe(403);

      const created = await rt.call(null, {
        method: 'POST',
        url: `/admin/accounts/${rt.accountId}/api-keys`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { environment: 'test', scopes: ['reviews:read', 'reviews:write'] },
      });
      expect(created.statusCode, created.body).toBe(201);
      expect(json(created).scopes).toEqual(['reviews:read', 'reviews:write']);
      expect((await review(d.id, { verdict: 'approve', reviewer: 'ops' }, json(created).key)).statusCode).toBe(200);
    });

    it('fires decision.reviewed (data: decision, review) to an endpoint on *, not to one on another list', async () => {
      const all = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/webhooks',
          payload: { url: receiver.url, events: ['*'] },
        }),
      );
      const denies = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/webhooks',
          payload: { url: `${receiver.url}?denies`, events: ['decision.deny'] },
        }),
      );
      const listed = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: `${receiver.url}?reviewed`, events: ['decision.reviewed'] },
      });
      expect(listed.statusCode, listed.body).toBe(201);
      const d = await decide('payments.refund');
      expect((await review(d.id, { verdict: 'approve', reviewer: 'carol', note: 'fine' })).statusCode).toBe(200);

      const events = (await rt.getOk('/v1/events?type=decision.reviewed')).data.filter(
        (e: EventItem) => e.data.decision.id === d.id,
      );
      expect(events).toHaveLength(1);
      expect(events[0].data).toMatchObject({
        decision: {
          id: d.id,
          effect: 'review',
          status: 'pending',
          review: { status: 'approved', reviewer: 'carol', note: 'fine' },
        },
        review: { status: 'approved', reviewer: 'carol', note: 'fine', reviewed_at: expect.any(String) },
      });
      expect(events[0].data.decision.permit_token).toBeUndefined();

      await rt.services.dispatcher.runOnce();
      const reviewed = receiver.received.filter(
        (r) => r.body.type === 'decision.reviewed' && r.body.data.decision.id === d.id,
      );
      expect(reviewed.map((r) => r.body.id)).toEqual([events[0].id, events[0].id]);
      const deliveriesOf = async (id: string) =>
        (await rt.getOk(`/v1/webhooks/${id}/deliveries`)).data.map((x: { event_type: string }) => x.event_type);
      expect(await deliveriesOf(all.id)).toContain('decision.reviewed');
      expect(await deliveriesOf(denies.id)).not.toContain('decision.reviewed');
      for (const id of [all.id, denies.id, json(listed).id])
        await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${id}` });
    });

    it("another account's decision ids answer 404 everywhere", async () => {
      const d = await decide('payments.refund');
      const otherReviewer = rt.otherKey;
      const answers = await Promise.all([
        review(d.id, { verdict: 'approve', reviewer: 'x' }, otherReviewer),
        rt.call(otherReviewer, { method: 'GET', url: `/v1/decisions/${d.id}?wait=1` }),
        rt.call(otherReviewer, { method: 'POST', url: `/v1/decisions/${d.id}/permit` }),
      ]);
      for (const r of answers) expect([r.statusCode, json(r).error.code]).toEqual([404, 'decision.not_found']);
      expect((await rt.getOk('/v1/reviews', otherReviewer)).data).toEqual([]);
      // The live environment of the same account is another tenant too.
      expect(
        (await review(d.id, { verdict: 'approve', reviewer: 'x' }, await rt.keyWith(['reviews:write'], 'live')))
          .statusCode,
      ).toBe(404);
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).review.status).toBe('open');
    });
  });
}
