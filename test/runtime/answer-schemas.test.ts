/**
 * Real answers of the running app validate against their JSON Schema in
 * schemas/api/answers/ (read as files, by `$id`, with ajv; not through the
 * OpenAPI document), on PostgreSQL and on the embedded store: decisions (decide,
 * read, list, confirm, review), a policy, an agent, a budget, a webhook and an
 * event, AuthZEN answers, a permit verification and an error. Objects with
 * named properties are validated closed, so a field the server sends and the
 * schema lacks fails, as does one the schema requires and the server leaves out.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMIT_INVALID_REASONS } from '../../runtime/domain/permits.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { closeObjects } from '../helpers/closed-schemas.js';
import type { JsonObject } from '../helpers/json.js';

type Json = JsonObject;

const SCHEMAS = new URL('../../schemas/', import.meta.url);
const ANSWERS = new URL('api/answers/', SCHEMAS);
const read = (url: URL) => JSON.parse(readFileSync(url, 'utf8')) as Json;

/** ajv with every answer schema (and the policy and bundle schemas they use) added by its `$id`. */
function answerValidator(): (file: string) => ValidateFunction {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  for (const file of ['policy.schema.json', 'bundle.schema.json']) ajv.addSchema(read(new URL(file, SCHEMAS)));
  for (const file of readdirSync(ANSWERS).filter((f) => f.endsWith('.schema.json')))
    ajv.addSchema(closeObjects(read(new URL(file, ANSWERS))) as Json);
  return (file) => ajv.getSchema(`https://agent-authz.dev/schemas/api/answers/${file}.schema.json`)!;
}

describe('the answer schemas, read as files', () => {
  it('each has its $id by its file name, a title, and resolves every $ref (ajv compiles them all)', () => {
    const files = readdirSync(ANSWERS).filter((f) => f.endsWith('.schema.json'));
    expect(files.length).toBeGreaterThan(40);
    const validator = answerValidator();
    const titles = new Set<string>();
    for (const file of files) {
      const schema = read(new URL(file, ANSWERS));
      expect(schema.$id).toBe(`https://agent-authz.dev/schemas/api/answers/${file}`);
      expect(schema.title, file).toMatch(/^[A-Z][A-Za-z]+$/);
      titles.add(schema.title as string);
      expect(validator(file.replace('.schema.json', '')), file).toBeInstanceOf(Function);
    }
    expect(titles.size).toBe(files.length);
  });

  it("the permit verification's reasons are the verifier's (the code's constant)", () => {
    expect(read(new URL('permit-verification.schema.json', ANSWERS)).properties.reason.enum).toEqual([
      ...PERMIT_INVALID_REASONS,
    ]);
  });
});

describe.each(STORE_KINDS)('real answers validate against schemas/api/answers (%s store)', (kind) => {
  let rt: TestRuntime;
  const validate = answerValidator();
  const checked: string[] = [];

  beforeAll(async () => {
    rt = await startRuntime(kind);
  }, 120_000);
  afterAll(() => rt?.close());

  /** Calls the route, expects the status, checks the body against `schema`; the body. */
  async function answer(
    schema: string,
    status: number,
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    payload?: Json,
  ): Promise<Json> {
    const r = await rt.call(rt.testKey, { method, url, ...(payload ? { payload } : {}) });
    expect(r.statusCode, `${method} ${url}: ${r.body}`).toBe(status);
    const body = json(r);
    const fn = validate(schema);
    expect(fn(body) ? [] : fn.errors, `${method} ${url} against ${schema}.schema.json`).toEqual([]);
    checked.push(schema);
    return body;
  }

  it('decisions: decide (allow, review awaiting approval, deny), read, list, confirm, review', async () => {
    await rt.setPolicies([
      {
        id: 'pol_as_allow',
        name: 'as-allow',
        effect: 'allow',
        actions: ['orders.read'],
        budget: { unit: 'USD', limit: 100, period: 'daily', threshold_alert: 0.5 },
      },
      {
        id: 'pol_as_review',
        name: 'as-review',
        effect: 'review',
        actions: ['wires.send'],
        approval: { required: true, timeout_seconds: 600 },
      },
    ]);
    const allow = await answer('decision', 200, 'POST', '/v1/decisions', {
      agent_id: 'as-bot',
      action: 'orders.read',
      resource: 'order:1',
      amount: 60,
      context: { channel: 'chat' },
      session_id: 'run-1',
    });
    expect(allow.permit_token).toEqual(expect.any(String));
    const awaiting = await answer('decision', 200, 'POST', '/v1/decisions', {
      agent_id: 'as-bot',
      action: 'wires.send',
    });
    expect(awaiting.review).toMatchObject({ status: 'open' });
    await answer('decision', 200, 'POST', '/v1/decisions', { agent_id: 'as-bot', action: 'nothing.here' });
    await answer('decision', 200, 'GET', `/v1/decisions/${allow.id}`);
    await answer('decision', 200, 'POST', `/v1/decisions/${allow.id}/confirm`, { amount: 55 });
    const reviewer = await rt.keyWith(['reviews:write']);
    const reviewed = await rt.call(reviewer, {
      method: 'POST',
      url: `/v1/decisions/${awaiting.id}/review`,
      payload: { verdict: 'approve', reviewer: 'alice', note: 'ok' },
    });
    expect(validate('decision')(json(reviewed)), reviewed.body).toBe(true);
    const list = await answer('decision-list', 200, 'GET', '/v1/decisions?limit=10');
    expect(list.data.length).toBe(3);
    await answer('decision-list', 200, 'GET', '/v1/reviews?status=approved');
    await answer('decision-preview', 200, 'POST', '/v1/decisions/preview', {
      agent_id: 'as-bot',
      action: 'orders.read',
      amount: 1,
    });
    await answer('permit-verification', 200, 'POST', '/v1/permits/verify', { token: allow.permit_token });
  });

  it('policies, agents, budgets, stats, webhooks, events', async () => {
    // First, so that what follows fires events to it (nothing listens on port 9: each delivery attempt fails and is recorded).
    const hook = await answer('webhook-endpoint-with-secret', 201, 'POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/as',
      events: ['*'],
    });
    await answer('policy-list', 200, 'GET', '/v1/policies');
    await answer('policy', 200, 'GET', '/v1/policies/pol_as_allow');
    await answer('policy-created', 201, 'POST', '/v1/policies', {
      name: 'as-more',
      effect: 'deny',
      actions: ['orders.delete'],
    });
    await answer('policy-validation', 200, 'POST', '/v1/policies/validate', {
      name: 'as-check',
      effect: 'allow',
      actions: ['not an action'],
    });
    await answer('bundle-status', 200, 'GET', '/v1/bundle');
    await answer('agent', 200, 'PUT', '/v1/agents/as-bot', { attributes: { team: 'ops' } });
    await answer('agent-list', 200, 'GET', '/v1/agents');
    await answer('budget-list', 200, 'GET', '/v1/budgets');
    await answer('budget-remaining-list', 200, 'GET', '/v1/budgets/remaining?agent_id=as-bot');
    await answer('decision-stats', 200, 'GET', '/v1/stats/decisions?minutes=5');
    await answer('budget-near-limit-list', 200, 'GET', '/v1/stats/budgets');
    await answer('webhook-endpoint', 200, 'GET', `/v1/webhooks/${hook.id}`);
    await rt.services.dispatcher.runOnce();
    const deliveries = await answer('webhook-delivery-list', 200, 'GET', `/v1/webhooks/${hook.id}/deliveries`);
    expect(deliveries.data.length).toBeGreaterThan(0);
    const events = await answer('event-list', 200, 'GET', '/v1/events?limit=5');
    await answer('event', 200, 'GET', `/v1/events/${events.data[0].id}`);
  });

  it('AuthZEN answers and an error', async () => {
    const subject = { type: 'agent', id: 'as-bot' };
    await answer('authzen-answer', 200, 'POST', '/access/v1/evaluation', {
      subject,
      action: { name: 'orders.read' },
      resource: { type: 'order', id: '1' },
      context: { amount: 1 },
    });
    const denial = await answer('authzen-answer', 200, 'POST', '/access/v1/evaluation', {
      subject,
      action: { name: 'wires.send' },
      resource: { type: 'wire', id: '1' },
    });
    await answer('authzen-answers', 200, 'POST', '/access/v1/evaluations', {
      subject,
      context: { amount: 1 },
      evaluations: [
        { action: { name: 'orders.read' }, resource: { type: 'order', id: '2' } },
        { action: { name: 'Not.Valid' }, resource: { type: 'order', id: '3' } },
      ],
    });
    await answer('authzen-task', 201, 'POST', '/access/v1/requests', {
      denial: {
        evaluation_id: denial.context.evaluation_id,
        expires_at: denial.context.access_request.expires_at,
        reason: 'approval_required',
      },
    });
    await answer('error', 404, 'GET', '/v1/decisions/dec_nothing_here');
  });

  it('refuses what its schema does not describe (the check is not vacuous)', async () => {
    const decision = json(await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions?limit=1' })).data[0] as Json;
    const fn = validate('decision');
    expect(fn(decision)).toBe(true);
    const { effect: _effect, ...noEffect } = decision;
    for (const bad of [
      { ...decision, surprise: 1 },
      noEffect,
      { ...decision, status: 'maybe' },
      { ...decision, review: { status: 'open' } },
      { ...decision, metadata: { ...decision.metadata, warnings: [{}] } },
    ]) {
      expect(fn(bad), JSON.stringify(bad).slice(0, 100)).toBe(false);
    }
    expect(new Set(checked).size).toBeGreaterThan(20);
  });
});
