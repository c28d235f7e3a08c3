/**
 * AuthZEN access requests (issue 34, part 2; docs/api.md#access-requests-for-approvals; the Access Request and Approval profile, draft), end to end with
 * two keys, a requester (decisions:write, the gateway) and a reviewer, on both
 * stores: an approval-required review answers a requestable denial
 * (`decision: false`, `reason: approval_required`, `evaluation_id`,
 * `access_request`), stored as policy.matched; the request is submitted (201,
 * a repeat 200 with the same task), polled, approved on POST
 * /v1/decisions/:id/review, and the re-evaluation with the approval answers the
 * approved decision with a permit and confirms it. A used approval, or one for
 * another action, resource or amount, is ignored: a new review awaiting
 * approval. 410 after the approval deadline (service clock), 409 for a
 * decision that never awaited approval, denied and timed-out reviews, and
 * other accounts' and keys' tasks not found. The request's context is stored
 * (as review.request_context) without the AUTHZ_REDACT_CONTEXT paths.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

const BASE_URL = 'https://pdp.example.test';
const TIMEOUT = 600;

type Json = JsonObject;

describe.each(STORE_KINDS)('AuthZEN access requests (%s store)', (kind) => {
  let rt: TestRuntime;
  let requester: string;
  let reviewer: string;
  let n = 0;

  const post = (key: string, url: string, payload: unknown) =>
    rt.call(key, { method: 'POST', url, payload: payload as Json });
  const evaluation = (agent: string, action: string, resource: string, context: Json = {}) => ({
    subject: { type: 'agent', id: agent },
    action: { name: action },
    resource: { type: 'doc', id: resource },
    context,
  });
  const evaluate = async (body: Json, key = requester) => {
    const r = await post(key, '/access/v1/evaluation', body);
    expect(r.statusCode, r.body).toBe(200);
    return json(r);
  };
  /** The access request for a denial as the gateway builds it from the answer. */
  const requestFor = (denial: Json, context?: Json) => ({
    denial: {
      evaluation_id: denial.context.evaluation_id,
      expires_at: denial.context.access_request.expires_at,
      reason: denial.context.reason,
    },
    ...(context ? { context } : {}),
  });
  const statusPath = (id: string) => `/access/v1/requests/${id}`;
  const poll = async (id: string, key = reviewer) => {
    const r = await rt.call(key, { method: 'GET', url: statusPath(id) });
    expect(r.statusCode, r.body).toBe(200);
    return json(r);
  };
  const review = async (id: string, verdict: 'approve' | 'deny') => {
    const r = await post(reviewer, `/v1/decisions/${id}/review`, { verdict, reviewer: 'rita' });
    expect(r.statusCode, r.body).toBe(200);
  };
  const errorOf = (r: { statusCode: number; body: string }) => [r.statusCode, JSON.parse(r.body).error?.code];
  /** A requestable denial, its request submitted and approved: the approval the task's result gives. */
  const approved = async (agent: string, resource = '1', context: Json = {}, action = 'can_publish') => {
    const denial = await evaluate(evaluation(agent, action, resource, context));
    expect((await post(requester, '/access/v1/requests', requestFor(denial))).statusCode).toBe(201);
    await review(denial.context.id, 'approve');
    return (await poll(denial.context.id)).result.approval as Json;
  };
  const agent = () => `ar-bot-${++n}`;

  beforeAll(async () => {
    // AUTHZ_REDACT_CONTEXT=context.secret: left out of a request's context as of a decision's.
    rt = await startRuntime(kind, { config: { baseUrl: BASE_URL, redactContext: [['secret']] } });
    requester = await rt.keyWith(['decisions:write']);
    reviewer = await rt.keyWith(['reviews:read', 'reviews:write', 'decisions:read']);
    await rt.setPolicies([
      {
        id: 'pol_publish',
        effect: 'review',
        actions: ['authzen.can_publish', 'authzen.can_delete'],
        approval: { required: true, timeout_seconds: TIMEOUT },
      },
      {
        id: 'pol_archive',
        effect: 'review',
        actions: ['authzen.can_archive'],
        approval: { required: true, timeout_seconds: TIMEOUT },
      },
      { id: 'pol_comment', effect: 'review', actions: ['authzen.can_comment'] },
      { id: 'pol_read', effect: 'allow', actions: ['authzen.can_read'] },
    ]);
  });
  afterAll(() => rt?.close());

  it('round trip: requestable denial, submission, polling, approval, re-evaluation with the permit', async () => {
    const bot = agent();
    const body = evaluation(bot, 'can_publish', '1', { amount: 5, channel: 'chat' });
    const denial = await evaluate(body);
    const id = denial.context.id as string;
    const deadline = new Date(rt.clock.now() + TIMEOUT * 1000).toISOString();
    expect(denial).toEqual({
      decision: false,
      context: {
        id,
        effect: 'review',
        reason: 'approval_required',
        status: 'awaiting_approval',
        evaluation_id: id,
        access_request: { endpoint: `${BASE_URL}/access/v1/requests`, expires_at: deadline },
      },
    });
    // Stored as any review awaiting approval: reason policy.matched, no request yet.
    const stored = await rt.getOk(`/v1/decisions/${id}`);
    expect(stored).toMatchObject({
      reason: 'policy.matched',
      status: 'awaiting_approval',
      approval_expires_at: deadline,
    });
    expect(stored.review).not.toHaveProperty('request_context');
    // No task before a request is submitted.
    expect(errorOf(await rt.call(reviewer, { method: 'GET', url: statusPath(id) }))).toEqual([
      404,
      'decision.not_found',
    ]);

    // The gateway submits (members the service does not use are ignored).
    const submitted = await post(requester, '/access/v1/requests', {
      ...requestFor(denial, { justification: 'month-end close', ticket: 'FIN-7', secret: 'never stored' }),
      subject: { type: 'agent', id: bot },
      requested_access: { requested_until: '2030-01-01T00:00:00Z' },
    });
    expect(submitted.statusCode, submitted.body).toBe(201);
    const task = { id, status: 'pending', status_endpoint: `${BASE_URL}/access/v1/requests/${id}` };
    expect(json(submitted)).toEqual({ task });
    expect(submitted.headers.location).toBe(task.status_endpoint);
    expect((await rt.getOk(`/v1/decisions/${id}`)).review.request_context).toEqual({
      justification: 'month-end close',
      ticket: 'FIN-7',
    });

    // A repeat: 200, the same task; the first request's context stays.
    const again = await post(
      requester,
      '/access/v1/requests',
      requestFor(denial, { justification: 'changed my mind' }),
    );
    expect(again.statusCode, again.body).toBe(200);
    expect(json(again)).toEqual({ task });
    expect((await rt.getOk(`/v1/decisions/${id}`)).review.request_context).toEqual({
      justification: 'month-end close',
      ticket: 'FIN-7',
    });

    // Polling: any key of the account with decisions:read or decisions:write; pending meanwhile.
    expect(await poll(id, reviewer)).toEqual({ task });
    expect(await poll(id, requester)).toEqual({ task });
    expect(errorOf(await rt.call(await rt.keyWith(['reviews:read']), { method: 'GET', url: statusPath(id) }))).toEqual([
      403,
      'auth.scope_insufficient',
    ]);

    // The reviewer approves on the review route; the task says approved, with the approval.
    rt.clock.advance(30);
    await review(id, 'approve');
    const approvedAt = new Date(rt.clock.now()).toISOString();
    const until = new Date(rt.clock.now() + 300 * 1000).toISOString();
    const done = await poll(id);
    expect(done).toEqual({
      task: { ...task, status: 'approved' },
      result: { mode: 'reevaluate', approval: { id, approved_at: approvedAt, approved_until: until } },
    });

    // Re-evaluation with the approval unchanged: the approved decision answers, with a permit; no new decision.
    const before = (await rt.getOk(`/v1/decisions?agent_id=${bot}`)).data.length;
    const allowed = await evaluate({ ...body, context: { ...body.context, approval: done.result.approval } });
    expect(allowed).toEqual({
      decision: true,
      context: {
        id,
        effect: 'review',
        reason: 'policy.matched',
        permit_token: expect.any(String),
        approval: done.result.approval,
      },
    });
    expect((await rt.getOk(`/v1/decisions?agent_id=${bot}`)).data.length).toBe(before);
    expect(await rt.getOk(`/v1/decisions/${id}`)).toMatchObject({
      status: 'confirmed',
      review: { status: 'approved', reviewer: 'rita' },
    });
    const verified = await post(rt.testKey, '/v1/permits/verify', { token: allowed.context.permit_token });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(json(verified)).toMatchObject({ valid: true, claims: { dec: id, sub: bot } });
    // Used, the task still reads approved.
    expect((await poll(id)).task.status).toBe('approved');

    // A second use of the confirmed approval is ignored: decided as any other, a new review awaiting approval.
    const second = await evaluate({ ...body, context: { ...body.context, approval: done.result.approval } });
    expect(second).toMatchObject({
      decision: false,
      context: { effect: 'review', reason: 'approval_required', status: 'awaiting_approval' },
    });
    expect(second.context.id).not.toBe(id);
    expect(second.context.permit_token).toBeUndefined();
    expect((await rt.getOk(`/v1/decisions?agent_id=${bot}`)).data.length).toBe(before + 1);
  });

  it('ignores an approval used for another action, resource, amount or agent (a new review), and it stays usable', async () => {
    const bot = agent();
    const approval = await approved(bot, '10', { amount: 7 });
    const asNew = async (body: Json) => {
      const answer = await evaluate(body);
      expect(answer).toMatchObject({
        decision: false,
        context: { reason: 'approval_required', status: 'awaiting_approval' },
      });
      expect(answer.context.id).not.toBe(approval.id);
      expect(answer.context.evaluation_id).toBe(answer.context.id);
    };
    await asNew(evaluation(bot, 'can_delete', '10', { amount: 7, approval }));
    await asNew(evaluation(bot, 'can_publish', '11', { amount: 7, approval }));
    await asNew(evaluation(bot, 'can_publish', '10', { amount: 8, approval }));
    await asNew(evaluation(agent(), 'can_publish', '10', { amount: 7, approval }));
    // An unknown approval id, or no id: decided as any other too.
    await asNew(
      evaluation(bot, 'can_publish', '10', {
        amount: 7,
        approval: { id: 'dec_nothing_here', approved_until: approval.approved_until },
      }),
    );
    await asNew(evaluation(bot, 'can_publish', '10', { amount: 7, approval: 'yes' }));
    expect((await rt.getOk(`/v1/decisions/${approval.id}`)).status).toBe('pending');
    // The request it was approved for still gets it (in a batch too).
    const r = await post(requester, '/access/v1/evaluations', {
      evaluations: [evaluation(bot, 'can_publish', '10', { amount: 7, approval })],
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r).evaluations[0]).toMatchObject({
      decision: true,
      context: { id: approval.id, permit_token: expect.any(String), approval },
    });
    expect((await rt.getOk(`/v1/decisions/${approval.id}`)).status).toBe('confirmed');
  });

  it('ignores an approval whose agent was revoked since (deny agent.revoked) or whose policy was deleted; restored, the agent gets it', async () => {
    const bot = agent();
    const approval = await approved(bot, '50');
    const body = evaluation(bot, 'can_publish', '50', { approval });
    expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${bot}/revoke` })).statusCode).toBe(200);
    const refused = await evaluate(body);
    expect(refused).toMatchObject({ decision: false, context: { effect: 'deny', reason: 'agent.revoked' } });
    expect(refused.context.id).not.toBe(approval.id);
    expect(refused.context.permit_token).toBeUndefined();
    expect((await rt.getOk(`/v1/decisions/${approval.id}`)).status).toBe('pending');
    // Restored before approved_until: the approval applies again.
    expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${bot}/restore` })).statusCode).toBe(200);
    expect(await evaluate(body)).toMatchObject({
      decision: true,
      context: { id: approval.id, permit_token: expect.any(String) },
    });

    // The policy that asked for the approval deleted: decided as any other (no policy now: a deny).
    const other = agent();
    const archived = await approved(other, '51', {}, 'can_archive');
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: '/v1/policies/pol_archive' })).statusCode).toBe(200);
    const gone = await evaluate(evaluation(other, 'can_archive', '51', { approval: archived }));
    expect(gone).toMatchObject({ decision: false, context: { effect: 'deny', reason: 'policy.not_found' } });
    expect((await rt.getOk(`/v1/decisions/${archived.id}`)).status).toBe('pending');
  });

  it('of two uses of one approval at once, exactly one gets it', async () => {
    const bot = agent();
    const approval = await approved(bot, '15');
    const body = evaluation(bot, 'can_publish', '15', { approval });
    const answers = await Promise.all([evaluate(body), evaluate(body)]);
    expect(answers.map((a) => a.decision).sort()).toEqual([false, true]);
    const used = answers.find((a) => a.decision)!;
    const fresh = answers.find((a) => !a.decision)!;
    expect(used.context.id).toBe(approval.id);
    expect(fresh.context).toMatchObject({ reason: 'approval_required', status: 'awaiting_approval' });
    expect(fresh.context.id).not.toBe(approval.id);
  });

  it('refuses a request after the approval deadline (410, the service clock) and for a decision that never awaited approval (409)', async () => {
    const bot = agent();
    const late = await evaluate(evaluation(bot, 'can_publish', '20'));
    // The body's expires_at is not trusted: a past one is taken while the decision's deadline has not come ...
    const early = await evaluate(evaluation(bot, 'can_publish', '21'));
    const r = await post(requester, '/access/v1/requests', {
      denial: { ...requestFor(early).denial, expires_at: '2000-01-01T00:00:00Z' },
    });
    expect(r.statusCode, r.body).toBe(201);
    // ... and a future one does not help after it.
    rt.clock.advance(TIMEOUT);
    const expired = await post(requester, '/access/v1/requests', {
      denial: { ...requestFor(late).denial, expires_at: '2100-01-01T00:00:00Z' },
    });
    expect(errorOf(expired)).toEqual([410, 'decision.expired']);
    expect(errorOf(await rt.call(reviewer, { method: 'GET', url: statusPath(late.context.id) }))).toEqual([
      404,
      'decision.not_found',
    ]);

    // An allow, and a review after the fact (no approval asked): never awaited approval.
    for (const action of ['can_read', 'can_comment']) {
      const answer = await evaluate(evaluation(bot, action, '22'));
      expect(answer.decision).toBe(true);
      expect(answer.context).not.toHaveProperty('access_request');
      const refused = await post(requester, '/access/v1/requests', {
        denial: { evaluation_id: answer.context.id, expires_at: '2100-01-01T00:00:00Z', reason: 'approval_required' },
      });
      expect(errorOf(refused)).toEqual([409, 'decision.not_reviewable']);
    }
    expect(errorOf(await post(requester, '/access/v1/requests', { denial: { evaluation_id: 'dec_made_up' } }))).toEqual(
      [404, 'decision.not_found'],
    );
    expect((await post(requester, '/access/v1/requests', { context: {} })).statusCode).toBe(400);
    expect(
      errorOf(
        await rt.call(requester, {
          method: 'POST',
          url: '/access/v1/requests',
          payload: '[1]',
          headers: { 'content-type': 'application/json' },
        }),
      ),
    ).toEqual([400, 'validation.invalid_json']);
  });

  it('answers denied for a refused review and expired for a timed-out one', async () => {
    const bot = agent();
    const refused = await evaluate(evaluation(bot, 'can_publish', '30'));
    const waiting = await evaluate(evaluation(bot, 'can_publish', '31'));
    for (const d of [refused, waiting])
      expect((await post(requester, '/access/v1/requests', requestFor(d))).statusCode).toBe(201);
    await review(refused.context.id, 'deny');
    expect(await poll(refused.context.id)).toEqual({
      task: {
        id: refused.context.id,
        status: 'denied',
        status_endpoint: `${BASE_URL}/access/v1/requests/${refused.context.id}`,
      },
    });
    expect((await poll(waiting.context.id)).task.status).toBe('pending');
    rt.clock.advance(TIMEOUT);
    expect(await poll(waiting.context.id)).toEqual({
      task: {
        id: waiting.context.id,
        status: 'expired',
        status_endpoint: `${BASE_URL}/access/v1/requests/${waiting.context.id}`,
      },
    });
    expect(await rt.getOk(`/v1/decisions/${waiting.context.id}`)).toMatchObject({
      effect: 'deny',
      reason: 'review.timeout',
    });
    // A repeat of either answers its task as it is now.
    const repeat = await post(requester, '/access/v1/requests', requestFor(refused));
    expect(repeat.statusCode).toBe(200);
    expect(json(repeat).task.status).toBe('denied');
  });

  it("finds no other account's task, and takes requests only for the key's own decisions", async () => {
    const bot = agent();
    const denial = await evaluate(evaluation(bot, 'can_publish', '40'));
    const id = denial.context.id as string;
    // Another key of the account (the reviewer's has no decisions:write; one with it) cannot submit for it.
    const otherGateway = await rt.keyWith(['decisions:write']);
    expect(errorOf(await post(otherGateway, '/access/v1/requests', requestFor(denial)))).toEqual([
      404,
      'decision.not_found',
    ]);
    expect(errorOf(await post(rt.otherKey, '/access/v1/requests', requestFor(denial)))).toEqual([
      404,
      'decision.not_found',
    ]);
    expect((await post(requester, '/access/v1/requests', requestFor(denial))).statusCode).toBe(201);
    expect((await poll(id, otherGateway)).task.id).toBe(id);
    // Another account, or the live environment of the same account: not found.
    expect(errorOf(await rt.call(rt.otherKey, { method: 'GET', url: statusPath(id) }))).toEqual([
      404,
      'decision.not_found',
    ]);
    expect(errorOf(await rt.call(rt.liveKey, { method: 'GET', url: statusPath(id) }))).toEqual([
      404,
      'decision.not_found',
    ]);
    // Its approval is ignored there: another account's evaluation with it is decided as any other (a deny: no policies there).
    await review(id, 'approve');
    const approval = (await poll(id)).result.approval;
    const elsewhere = await post(
      rt.otherKey,
      '/access/v1/evaluation',
      evaluation(bot, 'can_publish', '40', { approval }),
    );
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);
    expect(json(elsewhere).decision).toBe(false);
    expect(json(elsewhere).context.id).not.toBe(id);
    expect((await rt.getOk(`/v1/decisions/${id}`)).status).toBe('pending');
  });
});
