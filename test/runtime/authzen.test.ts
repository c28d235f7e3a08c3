/**
 * The AuthZEN Authorization API 1.0 on both stores (docs/api.md#authzen): the mapping of subject, action,
 * resource and context to a decision, allow / deny / review as decision
 * true / false, the decision stored like any other (readable, with its event),
 * budgets applying to context.amount, validation, batches (defaults, a bad
 * entry, a rate-limited entry), the discovery document and authentication.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../runtime/tenant.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EvaluationItem, agent, expectError } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** A fresh agent id per call, so tests never share rows. */

const BASE_URL = 'https://pdp.example.test';

describe.each(STORE_KINDS)('AuthZEN (%s)', (kind) => {
  let rt: TestRuntime;
  let principal: Principal;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { baseUrl: BASE_URL } });
    const [key] = await rt.store.sql<
      Array<{ id: string; scopes: string[] }>
    >`select id, scopes from api_keys where account_id = ${rt.accountId} and environment = 'test' limit 1`;
    principal = {
      keyId: key!.id,
      accountId: rt.accountId,
      environment: 'test',
      scopes: key!.scopes as Principal['scopes'],
    };
  });
  afterAll(() => rt.close());

  const evaluation = (body: unknown, key: string | null = rt.testKey, headers: Record<string, string> = {}) =>
    rt.call(key, { method: 'POST', url: '/access/v1/evaluation', payload: body as object, headers });
  const evaluations = (body: unknown, key: string | null = rt.testKey) =>
    rt.call(key, { method: 'POST', url: '/access/v1/evaluations', payload: body as object });
  const ok = async (r: Promise<LightMyRequestResponse>) => {
    const answer = await r;
    expect(answer.statusCode, answer.body).toBe(200);
    return json(answer);
  };
  const request = (
    agentId: string,
    action: string,
    resource = { type: 'order', id: '1001' },
    context?: Record<string, unknown>,
  ) => ({
    subject: { type: 'agent', id: agentId },
    action: { name: action },
    resource,
    ...(context ? { context } : {}),
  });
  const decisionsOf = async (agentId: string) =>
    (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}&limit=100`)).data as Array<JsonObject>;

  it('maps allow and review to decision true (with a permit token), deny to false (without one)', async () => {
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'], resources: ['order:*'] },
      { id: 'pol_refund', effect: 'review', actions: ['payments.refund'] },
      { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
    ]);
    const a = agent('map');
    const allow = await ok(evaluation(request(a, 'orders.read')));
    expect(allow).toEqual({
      decision: true,
      context: {
        id: expect.stringMatching(/^dec_/),
        effect: 'allow',
        reason: 'policy.matched',
        permit_token: expect.any(String),
      },
    });
    const review = await ok(evaluation(request(a, 'payments.refund')));
    expect(review).toEqual({
      decision: true,
      context: {
        id: expect.stringMatching(/^dec_/),
        effect: 'review',
        reason: 'policy.matched',
        permit_token: expect.any(String),
      },
    });
    const deny = await ok(evaluation(request(a, 'orders.delete')));
    expect(deny).toEqual({
      decision: false,
      context: { id: expect.stringMatching(/^dec_/), effect: 'deny', reason: 'policy.matched' },
    });
    // No policy for the action, and a resource outside the policy's globs: the usual deny reasons.
    expect((await ok(evaluation(request(a, 'orders.archive')))).context).toMatchObject({
      effect: 'deny',
      reason: 'policy.not_found',
    });
    expect((await ok(evaluation(request(a, 'orders.read', { type: 'customer', id: '7' })))).context).toMatchObject({
      effect: 'deny',
      reason: 'resource.not_allowed',
    });
    // The token is a real permit for that decision.
    const verified = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/permits/verify',
      payload: { token: allow.context.permit_token },
    });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(JSON.stringify(json(verified).claims)).toContain(allow.context.id);
  });

  it('stores the decision like any other: agent, action, "<type>:<id>", amount, the context with the properties, its event', async () => {
    await rt.setPolicies([
      {
        id: 'pol_team',
        effect: 'allow',
        actions: ['payments.refund'],
        condition: "context.subject.team == 'support' && context.resource.region == 'eu'",
      },
    ]);
    const a = agent('stored');
    const body = {
      subject: { type: 'agent', id: a, properties: { team: 'support' } },
      action: { name: 'payments.refund', properties: { method: 'POST' } },
      resource: { type: 'order', id: 'ord_9', properties: { region: 'eu' } },
      context: { amount: 12.5, channel: 'chat' },
      options: { evaluations_semantic: 'execute_all' },
    };
    const answer = await ok(evaluation(body));
    expect(answer.context).toMatchObject({ effect: 'allow', reason: 'policy.matched' });
    const stored = await rt.getOk(`/v1/decisions/${answer.context.id}`);
    expect(stored).toMatchObject({
      id: answer.context.id,
      agent_id: a,
      action: 'payments.refund',
      resource: 'order:ord_9',
      amount: 12.5,
      effect: 'allow',
      policy_id: 'pol_team',
      status: 'pending',
    });
    const row = await rt.services.decisions.get(principal, answer.context.id);
    expect(row.context).toEqual({
      amount: 12.5,
      channel: 'chat',
      subject: { team: 'support' },
      action: { method: 'POST', name: 'payments.refund' },
      resource: { region: 'eu' },
    });
    // The properties are what the condition read: another team is not allowed.
    const other = await ok(evaluation({ ...body, subject: { type: 'agent', id: a, properties: { team: 'sales' } } }));
    expect(other.context).toMatchObject({ effect: 'deny' });
    // Without properties the three keys are still there, empty but for the action's name.
    const bare = await ok(evaluation(request(a, 'payments.refund')));
    expect((await rt.services.decisions.get(principal, bare.context.id)).context).toEqual({
      subject: {},
      action: { name: 'payments.refund' },
      resource: {},
    });
    // Its event, as for POST /v1/decisions; and it is confirmable like any decision.
    const events = (await rt.getOk('/v1/events?type=decision.allow&limit=100')).data as Array<JsonObject>;
    expect(events.find((e) => e.data.decision.id === answer.context.id)?.data.decision).toMatchObject({
      agent_id: a,
      action: 'payments.refund',
      resource: 'order:ord_9',
    });
    const confirmed = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${answer.context.id}/confirm` });
    expect(json(confirmed).status).toBe('confirmed');
    // Registered on first sight like any agent.
    expect((await rt.getOk(`/v1/agents/${encodeURIComponent(a)}`)).status).toBe('active');
    // The context's session_id and on_behalf_of (strings) become the decision's.
    const run = await ok(
      evaluation({ ...body, context: { ...body.context, session_id: 'run-7', on_behalf_of: 'user-9' } }),
    );
    expect(await rt.getOk(`/v1/decisions/${run.context.id}`)).toMatchObject({
      session_id: 'run-7',
      on_behalf_of: 'user-9',
    });
    const notStrings = await ok(evaluation({ ...body, context: { ...body.context, session_id: 7, on_behalf_of: '' } }));
    expect(await rt.getOk(`/v1/decisions/${notStrings.context.id}`)).toMatchObject({
      session_id: null,
      on_behalf_of: null,
    });
  });

  it('applies budgets to context.amount (a number; anything else is no amount)', async () => {
    await rt.setPolicies([
      {
        id: 'pol_usd',
        effect: 'allow',
        actions: ['payments.charge'],
        budget: { unit: 'USD', limit: 100, period: 'monthly' },
      },
    ]);
    const a = agent('budget');
    const charge = (amount: unknown) =>
      evaluation(request(a, 'payments.charge', { type: 'customer', id: 'cus_1' }, { amount }));
    expect((await ok(charge(60))).context).toMatchObject({ effect: 'allow' });
    // 60 held + 50 > 100.
    expect(await ok(charge(50))).toMatchObject({
      decision: false,
      context: { effect: 'deny', reason: 'budget.exceeded' },
    });
    expect((await ok(charge(40))).context).toMatchObject({ effect: 'allow' });
    const budgets = (await rt.getOk(`/v1/budgets?agent_id=${encodeURIComponent(a)}`)).data;
    expect(budgets).toEqual([expect.objectContaining({ policy_id: 'pol_usd', held: 100, consumed: 0 })]);
    // A string amount is no amount: a fiat budget needs one (400 validation.missing_field, as POST /v1/decisions).
    expectError(await charge('5'), 400, 'validation.missing_field');
    // A negative amount is refused as POST /v1/decisions refuses it.
    expectError(await charge(-1), 400, 'validation.invalid_field');
    expect((await decisionsOf(a)).length).toBe(3);
  });

  it('validates: missing subject, action or resource (missing_field), wrong shapes (invalid_field), action names over 200 characters (invalid_action)', async () => {
    await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
    const a = agent('invalid');
    const full = request(a, 'orders.read');
    const noSubject = { action: full.action, resource: full.resource };
    expect(expectError(await evaluation(noSubject), 400, 'validation.missing_field').message).toContain('subject');
    expectError(await evaluation({ ...full, resource: undefined }), 400, 'validation.missing_field');
    expectError(await evaluation({ ...full, subject: { type: 'agent' } }), 400, 'validation.missing_field');
    expectError(await evaluation({ ...full, subject: { type: 'agent', id: 7 } }), 400, 'validation.invalid_field');
    expectError(
      await evaluation({ ...full, subject: { type: 'agent', id: 'x'.repeat(257) } }),
      400,
      'validation.invalid_field',
    );
    expectError(
      await evaluation({ ...full, resource: { type: 'order', id: 'x'.repeat(1020) } }),
      400,
      'validation.invalid_field',
    );
    expectError(await evaluation({ ...full, context: [] }), 400, 'validation.invalid_field');
    expectError(await evaluation({ ...full, action: { name: 7 } }), 400, 'validation.invalid_field');
    // Any name is mapped (authzen-interop.test.ts), up to 200 characters.
    expect(
      expectError(await evaluation({ ...full, action: { name: 'r'.repeat(201) } }), 400, 'validation.invalid_action')
        .message,
    ).toBe('action.name must NOT have more than 200 characters');
    // Nothing was stored for any of them.
    expect(await decisionsOf(a)).toEqual([]);
  });

  it('decides a batch in order with the top-level defaults; an entry replaces a default whole', async () => {
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'], resources: ['order:*'] },
      { id: 'pol_edit', effect: 'review', actions: ['orders.edit'] },
    ]);
    const a = agent('batch');
    const b = agent('batch-other');
    const answer = await ok(
      evaluations({
        subject: { type: 'agent', id: a },
        action: { name: 'orders.read' },
        context: { channel: 'api' },
        evaluations: [
          { resource: { type: 'order', id: '1' } },
          { resource: { type: 'customer', id: '2' } },
          { action: { name: 'orders.edit' }, resource: { type: 'order', id: '3' } },
          { subject: { type: 'agent', id: b }, resource: { type: 'order', id: '4' }, context: { channel: 'chat' } },
        ],
      }),
    );
    expect(answer.evaluations.map((e: EvaluationItem) => [e.decision, e.context.effect, e.context.reason])).toEqual([
      [true, 'allow', 'policy.matched'],
      [false, 'deny', 'resource.not_allowed'],
      [true, 'review', 'policy.matched'],
      [true, 'allow', 'policy.matched'],
    ]);
    const stored = await Promise.all(
      answer.evaluations.map((e: EvaluationItem) => rt.services.decisions.get(principal, e.context.id)),
    );
    expect(stored.map((d) => [d.agent_id, d.action, d.resource, (d.context as { channel?: unknown }).channel])).toEqual(
      [
        [a, 'orders.read', 'order:1', 'api'],
        [a, 'orders.read', 'customer:2', 'api'],
        [a, 'orders.edit', 'order:3', 'api'],
        [b, 'orders.read', 'order:4', 'chat'],
      ],
    );
    // Without `evaluations`: a single evaluation, answered as one.
    expect(await ok(evaluations(request(a, 'orders.read')))).toMatchObject({
      decision: true,
      context: { effect: 'allow' },
    });
    // An empty list: the top-level request is the one evaluation, answered as one.
    expect(await ok(evaluations({ ...request(a, 'orders.read'), evaluations: [] }))).toMatchObject({
      decision: true,
      context: { effect: 'allow' },
    });
    // More than 100 entries: the whole request is refused.
    expectError(
      await evaluations({ evaluations: Array.from({ length: 101 }, () => request(a, 'orders.read')) }),
      400,
      'validation.invalid_field',
    );
  });

  it('answers a failing batch entry with decision false and context.error; the others are still decided and stored', async () => {
    await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
    const a = agent('partial');
    const answer = await ok(
      evaluations({
        subject: { type: 'agent', id: a },
        resource: { type: 'order', id: '1' },
        evaluations: [
          { action: { name: 'orders.read' } },
          { action: { name: 'can_read'.repeat(26) } },
          { subject: { type: 'agent' }, action: { name: 'orders.read' } },
          {},
          'not an object',
          { action: { name: 'orders.read' }, context: { amount: -5 } },
          { action: { name: 'orders.read' }, resource: { type: 'order', id: '2' } },
        ],
      }),
    );
    const [first, badAction, noId, noAction, notObject, negative, last] = answer.evaluations;
    expect(first).toMatchObject({ decision: true, context: { effect: 'allow' } });
    expect(badAction).toEqual({
      decision: false,
      context: {
        error: {
          code: 'validation.invalid_action',
          message: 'evaluations[1].action.name must NOT have more than 200 characters',
        },
      },
    });
    expect(noId).toEqual({
      decision: false,
      context: { error: { code: 'validation.missing_field', message: 'evaluations[2].subject.id is required' } },
    });
    expect(noAction).toEqual({
      decision: false,
      context: { error: { code: 'validation.missing_field', message: 'evaluations[3].action is required' } },
    });
    expect(notObject).toMatchObject({ decision: false, context: { error: { code: 'validation.invalid_field' } } });
    expect(negative).toMatchObject({
      decision: false,
      context: { error: { code: 'validation.invalid_field', message: expect.stringContaining('amount') } },
    });
    expect(last).toMatchObject({ decision: true, context: { effect: 'allow' } });
    // The two decided entries are stored; the failed ones left nothing.
    expect((await decisionsOf(a)).map((d) => d.id).sort()).toEqual([first.context.id, last.context.id].sort());
    // A malformed default is a problem of the whole request: 400.
    expectError(
      await evaluations({
        subject: { type: 'agent', id: 5 },
        evaluations: [{ action: { name: 'orders.read' }, resource: { type: 'order', id: '1' } }],
      }),
      400,
      'validation.invalid_field',
    );
  });

  it('answers a rate-limited batch entry with rate_limit.exceeded; the entries before and after still count', async () => {
    await rt.setPolicies([
      { id: 'pol_limited', effect: 'allow', actions: ['orders.read'], rate_limit: { per_minute: 2 } },
      { id: 'pol_free', effect: 'allow', actions: ['orders.list'] },
    ]);
    const a = agent('limited');
    const answer = await ok(
      evaluations({
        subject: { type: 'agent', id: a },
        resource: { type: 'order', id: '1' },
        evaluations: [
          { action: { name: 'orders.read' } },
          { action: { name: 'orders.read' } },
          { action: { name: 'orders.read' } },
          { action: { name: 'orders.list' } },
        ],
      }),
    );
    expect(answer.evaluations.map((e: EvaluationItem) => e.decision)).toEqual([true, true, false, true]);
    expect(answer.evaluations[2]).toEqual({
      decision: false,
      context: { error: { code: 'rate_limit.exceeded', message: expect.stringContaining('pol_limited') } },
    });
    const stored = await decisionsOf(a);
    expect(stored.map((d) => d.action).sort()).toEqual(['orders.list', 'orders.read', 'orders.read']);
    // The single route answers the limit as POST /v1/decisions does: 429 with Retry-After.
    const single = await evaluation(request(a, 'orders.read'));
    expectError(single, 429, 'rate_limit.exceeded');
    expect(Number(single.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // A minute later the limiter has room again.
    rt.clock.advance(60);
    expect((await ok(evaluation(request(a, 'orders.read')))).decision).toBe(true);
  });

  it('takes an Idempotency-Key: a retry answers the same decisions (with fresh permit tokens) and decides nothing again', async () => {
    await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
    const a = agent('idem');
    const withKey = (url: string, payload: object, key: string) =>
      rt.call(rt.testKey, { method: 'POST', url, payload, headers: { 'idempotency-key': key } });
    const single = request(a, 'orders.read');
    const first = await withKey('/access/v1/evaluation', single, `idem-${a}-1`);
    const again = await withKey('/access/v1/evaluation', single, `idem-${a}-1`);
    expect(first.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(json(again).context.id).toBe(json(first).context.id);
    expect(typeof json(again).context.permit_token).toBe('string');
    const batch = {
      subject: { type: 'agent', id: a },
      action: { name: 'orders.read' },
      evaluations: [
        { resource: { type: 'order', id: '1' } },
        { action: { name: 'orders.nope' }, resource: { type: 'order', id: '2' } },
      ],
    };
    const b1 = json(await withKey('/access/v1/evaluations', batch, `idem-${a}-2`));
    const b2res = await withKey('/access/v1/evaluations', batch, `idem-${a}-2`);
    expect(b2res.headers['idempotent-replayed']).toBe('true');
    const b2 = json(b2res);
    expect(b2.evaluations.map((e: EvaluationItem) => e.context.id)).toEqual(
      b1.evaluations.map((e: EvaluationItem) => e.context.id),
    );
    expect(typeof b2.evaluations[0].context.permit_token).toBe('string');
    expect(b2.evaluations[1]).toEqual({
      decision: false,
      context: { id: b1.evaluations[1].context.id, effect: 'deny', reason: 'policy.not_found' },
    });
    // Three decisions in all; the key with another body is refused.
    expect((await decisionsOf(a)).length).toBe(3);
    expectError(
      await withKey('/access/v1/evaluation', request(a, 'orders.list'), `idem-${a}-1`),
      400,
      'idempotency.key_reused',
    );
  });

  it('serves the discovery document without auth, from the base URL', async () => {
    const r = await rt.call(null, { method: 'GET', url: '/.well-known/authzen-configuration' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(json(r)).toEqual({
      policy_decision_point: BASE_URL,
      access_evaluation_endpoint: `${BASE_URL}/access/v1/evaluation`,
      access_evaluations_endpoint: `${BASE_URL}/access/v1/evaluations`,
      search_subject_endpoint: `${BASE_URL}/access/v1/search/subject`,
      search_action_endpoint: `${BASE_URL}/access/v1/search/action`,
      access_request_endpoint: `${BASE_URL}/access/v1/requests`,
      capabilities: ['urn:openid:authzen:capability:access-request'],
    });
  });

  it('authenticates with API keys and the decisions:write scope; echoes X-Request-ID', async () => {
    await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
    const a = agent('auth');
    const body = request(a, 'orders.read');
    const readOnly = await rt.keyWith(['decisions:read']);
    const writer = await rt.keyWith(['decisions:write']);
    for (const send of [evaluation, evaluations]) {
      expectError(await send(body, null), 401, 'auth.invalid_key');
      expectError(await send(body, 'svc_test_sk_' + 'x'.repeat(40)), 401, 'auth.invalid_key');
      expectError(await send(body, readOnly), 403, 'auth.scope_insufficient');
      expect((await ok(send(body, writer))).decision).toBe(true);
    }
    // The decision belongs to the key's environment: a live key's decision is not visible with the test key.
    const live = await ok(evaluation(body, rt.liveKey));
    expect(live.decision).toBe(false);
    expect((await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${live.context.id}` })).statusCode).toBe(
      404,
    );
    expect((await rt.getOk(`/v1/decisions/${live.context.id}`, rt.liveKey)).livemode).toBe(true);
    // AuthZEN's request identification: the PEP's X-Request-ID comes back, on answers and errors.
    const echoed = await evaluation(body, rt.testKey, { 'x-request-id': 'bfe9eb29-ab87' });
    expect(echoed.headers['x-request-id']).toBe('bfe9eb29-ab87');
    expect((await evaluation({}, rt.testKey, { 'x-request-id': 'r-2' })).headers['x-request-id']).toBe('r-2');
    expect((await evaluation({}, null, { 'x-request-id': 'r-3' })).headers['x-request-id']).toBe('r-3');
  });
});
