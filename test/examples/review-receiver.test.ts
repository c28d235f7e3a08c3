/**
 * The example review receiver (examples/review-receiver): review events from a
 * real runtime, delivered over signed webhooks on 127.0.0.1, become chat
 * messages (text, Approve and Deny links to the dashboard's review), and the
 * verdict a follow-up; other events none. Nothing leaves the machine: the
 * messages are captured where they would be posted.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  escapeMrkdwn,
  reviewLink,
  reviewMessage,
  type ChatMessage,
  type EventEnvelope,
} from '../../examples/review-receiver/message.js';
import { buildReviewReceiver } from '../../examples/review-receiver/server.js';
import { json, startRuntime, type TestRuntime } from '../runtime/helpers/app.js';

const DASHBOARD = 'https://authz.example.com/dashboard';

describe('review receiver', () => {
  let rt: TestRuntime;
  let receiver: FastifyInstance;
  const posted: ChatMessage[] = [];
  let reviewerKey: string;

  beforeAll(async () => {
    rt = await startRuntime('embedded');
    reviewerKey = await rt.keyWith(['reviews:write']);
    await rt.setPolicies([
      {
        id: 'pol_refunds',
        name: 'refunds',
        effect: 'review',
        actions: ['payments.refund'],
        approval: { required: true, timeout_seconds: 900 },
      },
      { id: 'pol_exports', name: 'exports', effect: 'review', actions: ['data.export'] },
      { id: 'pol_reads', name: 'reads', effect: 'allow', actions: ['orders.read'] },
    ]);
    // The endpoint first (its secret is shown once), then the receiver with that secret.
    const endpoint = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://127.0.0.1:9/placeholder', events: ['*'] },
    });
    const secret = json(endpoint).secret as string;
    receiver = await buildReviewReceiver({ secret, dashboardUrl: DASHBOARD, post: (m) => void posted.push(m) });
    await receiver.listen({ port: 0, host: '127.0.0.1' });
    const { port } = receiver.server.address() as AddressInfo;
    const updated = await rt.call(rt.testKey, {
      method: 'PUT',
      url: `/v1/webhooks/${json(endpoint).id}`,
      payload: { url: `http://127.0.0.1:${port}/webhooks` },
    });
    expect(updated.statusCode, updated.body).toBe(200);
  });
  afterAll(async () => {
    await receiver?.close();
    await rt?.close();
  });

  it('posts an approval request with Approve and Deny links, then who decided', async () => {
    const d = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: {
          agent_id: 'refund-bot',
          action: 'payments.refund',
          resource: 'order:1001',
          amount: 25,
          context: { why: 'damaged <parcel>' },
        },
      }),
    );
    expect(d.status).toBe('awaiting_approval');
    await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: 'reader', action: 'orders.read' },
    });
    await rt.services.dispatcher.runOnce();
    expect(posted).toHaveLength(1);
    const [request] = posted;
    expect(request!.text).toBe(
      'Approval needed [test]: `refund-bot` asks for `payments.refund` on `order:1001` (amount 25)',
    );
    const actions = request!.blocks.find((b) => b.type === 'actions') as {
      elements: Array<{ text: { text: string }; url: string; style: string }>;
    };
    expect(actions.elements.map((e) => [e.text.text, e.style, e.url])).toEqual([
      ['Approve', 'primary', `${DASHBOARD}#reviews/${d.id}/approve`],
      ['Deny', 'danger', `${DASHBOARD}#reviews/${d.id}/deny`],
    ]);
    const context = JSON.stringify(request!.blocks.find((b) => b.type === 'context'));
    expect(context).toContain(d.approval_expires_at);
    expect(context).toContain('damaged &lt;parcel&gt;');

    const r = await rt.call(reviewerKey, {
      method: 'POST',
      url: `/v1/decisions/${d.id}/review`,
      payload: { verdict: 'approve', reviewer: 'Dana', note: 'called the customer' },
    });
    expect(r.statusCode).toBe(200);
    await rt.services.dispatcher.runOnce();
    expect(posted).toHaveLength(2);
    expect(posted[1]!.text).toBe(
      `Review of \`${d.id}\` [test] approved by Dana: \`refund-bot\` asks for \`payments.refund\` on \`order:1001\` (amount 25). Note: called the customer`,
    );
    expect(posted[1]!.blocks.some((b) => b.type === 'actions')).toBe(false);
  });

  it('says when a review is after the fact, and when an approval timed out', async () => {
    const flagged = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'export-bot', action: 'data.export' },
      }),
    );
    const waiting = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'refund-bot', action: 'payments.refund', amount: 5 },
      }),
    );
    await rt.services.dispatcher.runOnce();
    const before = posted.length;
    expect(posted.at(-2)!.text).toContain(
      'Review requested [test]: `export-bot` asks for `data.export` (already allowed; your verdict is recorded)',
    );
    expect(JSON.stringify(posted.at(-2)!.blocks)).toContain(`#reviews/${flagged.id}/approve`);
    expect(posted.at(-1)!.text).toContain('Approval needed [test]: `refund-bot`');
    rt.clock.advance(900);
    expect(await rt.services.approvals.timeOutOverdue()).toBe(1);
    await rt.services.dispatcher.runOnce();
    expect(posted).toHaveLength(before + 1);
    expect(posted.at(-1)!.text).toContain(`Review of \`${waiting.id}\` [test] timed out (nobody answered): denied`);
  });

  it('builds nothing for other events, and escapes what the agent chose', () => {
    const envelope = (type: string, decision: Record<string, unknown>): EventEnvelope => ({
      id: 'evt_1',
      type,
      created_at: '2026-11-21T10:00:00.000Z',
      livemode: true,
      data: { decision },
    });
    const base = {
      id: 'dec_1',
      agent_id: 'bot<script>',
      action: 'payments.refund',
      resource: null,
      amount: null,
      status: 'awaiting_approval',
      effect: 'review',
      reason: 'policy.matched',
      policy_id: 'pol_x',
    };
    expect(
      reviewMessage(envelope('decision.allow', { ...base, effect: 'allow', review: null }), {
        dashboardUrl: DASHBOARD,
      }),
    ).toBeNull();
    expect(
      reviewMessage(
        envelope('decision.review', { ...base, review: { status: 'approved', reviewer: 'a', note: null } }),
        { dashboardUrl: DASHBOARD },
      ),
    ).toBeNull();
    expect(
      reviewMessage(
        { id: 'evt_2', type: 'agent.revoked', created_at: '', livemode: true, data: { agent_id: 'x' } },
        { dashboardUrl: DASHBOARD },
      ),
    ).toBeNull();
    const message = reviewMessage(
      envelope('decision.review', { ...base, review: { status: 'open', reviewer: null, note: null } }),
      { dashboardUrl: `${DASHBOARD}/` },
    );
    expect(message!.text).toBe('Approval needed: `bot&lt;script&gt;` asks for `payments.refund`');
    expect(escapeMrkdwn('a & <b>')).toBe('a &amp; &lt;b&gt;');
    expect(reviewLink(`${DASHBOARD}/`, 'dec_1', 'deny')).toBe(`${DASHBOARD}#reviews/dec_1/deny`);
  });
});
