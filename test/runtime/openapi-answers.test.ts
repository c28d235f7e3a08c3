/**
 * The OpenAPI document describes the answers the service really gives, on both
 * stores: a scenario drives every documented operation (enumerated from the
 * routes the app registers) to its success answer, and every route to the
 * errors its input and credentials can cause (401, 403, 404, 400, 413, 415, and
 * 409 / 410 / 429 where they apply); each answer is validated with ajv against
 * the document: the schema of its status (an error status must be listed for
 * its operation, not left to `default`) and content type, YAML answers parsed
 * first. Objects are validated closed (a field the document does not name
 * fails), though the document leaves them open for clients.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { InjectOptions, LightMyRequestResponse, RouteOptions } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources, createBundle } from '../../compiler/index.js';
import { buildApp } from '../../runtime/app.js';
import { configFromEnv } from '../../runtime/config.js';
import { openServices } from '../../runtime/services.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { closeObjects } from '../helpers/closed-schemas.js';
import type { JsonObject } from '../helpers/json.js';

type Json = JsonObject;

/** Routes that serve the document, the docs page and the dashboard: pages, not operations. */
const SELF = (url: string) =>
  url === '/v1/openapi.json' ||
  url === '/docs' ||
  url.startsWith('/docs/') ||
  url === '/dashboard' ||
  url.startsWith('/dashboard/');
const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Answer {
  /** Which app answered: the main one, or the AUTHZ_TEST_CLOCK=1 one (its document has POST /admin/clock). */
  app: 'main' | 'clock';
  /** `METHOD /path/{param}` as in the document. */
  op: string;
  what: string;
  status: number;
  type: string;
  body: string;
}

/** A validator of the document's schemas by JSON pointer. */
function documentValidator(doc: Json): (pointer: string[]) => ValidateFunction {
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateSchema: false });
  ajv.addFormat('date-time', ISO_MS);
  ajv.addSchema(
    { ...doc, components: { ...doc.components, schemas: closeObjects(doc.components.schemas) } },
    'https://agent-authz.test/openapi.json',
  );
  const cache = new Map<string, ValidateFunction>();
  return (pointer) => {
    const ref = `https://agent-authz.test/openapi.json#/${pointer.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
    let fn = cache.get(ref);
    if (!fn) {
      fn = ajv.compile({ $ref: ref });
      cache.set(ref, fn);
    }
    return fn;
  };
}

const METRICS_TOKEN = 'metrics-token-for-the-openapi-test';

describe.each(STORE_KINDS)('OpenAPI document against real answers (%s store)', (kind) => {
  let rt: TestRuntime;
  let doc: Json;
  const docs: Partial<Record<Answer['app'], Json>> = {};
  const validators: Partial<Record<Answer['app'], (pointer: string[]) => ValidateFunction>> = {};
  const routes: Array<{ method: string; url: string }> = [];
  const answers: Answer[] = [];

  beforeAll(async () => {
    rt = await startRuntime(kind, {
      // /metrics is off without a token.
      config: { metricsToken: METRICS_TOKEN },
      app: {
        onRoute: (route: RouteOptions) => {
          for (const method of ([] as string[]).concat(route.method))
            if (method !== 'HEAD' && !SELF(route.url)) routes.push({ method, url: route.url });
        },
      },
    });
    doc = json(await rt.app.inject({ method: 'GET', url: '/v1/openapi.json' }));
    docs.main = doc;
    validators.main = documentValidator(doc);
    await scenario();
  }, 120_000);
  afterAll(() => rt?.close());

  /** Sends a request to the route `key` (as registered: `POST /v1/decisions/:id/confirm`) and records the answer. */
  async function send(
    key: string,
    params: Record<string, string>,
    options: InjectOptions & { auth?: string | null } = {},
    app: { inject: (o: InjectOptions) => Promise<LightMyRequestResponse>; name: Answer['app'] } = {
      inject: (o) => rt.app.inject(o),
      name: 'main',
    },
  ): Promise<LightMyRequestResponse> {
    const [method, url] = key.split(' ') as [string, string];
    const path = url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) =>
      encodeURIComponent(params[name] ?? `${name}_made_up`),
    );
    const auth =
      options.auth === undefined ? `Bearer ${url.startsWith('/admin/') ? ADMIN_TOKEN : rt.testKey}` : options.auth;
    const { auth: _a, ...rest } = options;
    const target = typeof rest.url === 'string' ? rest.url : path;
    const r = await app.inject({
      method: method as 'GET',
      url: target,
      ...rest,
      headers: { ...(auth ? { authorization: auth } : {}), ...(rest.headers ?? {}) },
    });
    answers.push({
      app: app.name,
      op: `${method} ${openapiPath(url)}`,
      what: `${method} ${target}`,
      status: r.statusCode,
      type: String(r.headers['content-type'] ?? ''),
      body: r.body,
    });
    return r;
  }
  const ok = async (
    key: string,
    params: Record<string, string> = {},
    options: InjectOptions & { auth?: string | null } = {},
  ) => {
    const r = await send(key, params, options);
    expect(r.statusCode, `${key}: ${r.body}`).toBeLessThan(300);
    return r.headers['content-type']?.toString().startsWith('application/json') ? json(r) : {};
  };

  async function scenario(): Promise<void> {
    const closedPort = 9; // discard: nothing listens, every delivery attempt fails (and is recorded)
    await ok('GET /healthz');
    await ok('GET /', {}, { auth: null });
    await ok('GET /readyz');
    await ok('GET /.well-known/jwks.json', {}, { auth: null });
    await ok('GET /metrics', {}, { auth: `Bearer ${METRICS_TOKEN}` });

    // Policies: JSON and YAML bodies, one of each effect, a budget and a rate limit.
    const budgeted = await ok(
      'POST /v1/policies',
      {},
      {
        payload: {
          name: 'oa-orders',
          effect: 'allow',
          agents: ['oa-*'],
          actions: ['orders.*'],
          resources: ['order:*'],
          condition: 'amount <= 500',
          budget: { unit: 'USD', limit: 100, period: 'daily', threshold_alert: 0.5 },
          rate_limit: { per_hour: 1000 },
        },
      },
    );
    const yamlPolicy =
      'name: oa-refunds\neffect: review\nactions: ["refunds.create"]\ndescription: a person looks first\n';
    const review = await ok(
      'POST /v1/policies',
      {},
      { payload: yamlPolicy, headers: { 'content-type': 'application/yaml' } },
    );
    await ok(
      'POST /v1/policies',
      {},
      { payload: { id: 'pol_oa_deny', name: 'oa-deny', effect: 'deny', actions: ['orders.delete'], priority: 1 } },
    );
    await ok(
      'POST /v1/policies',
      {},
      {
        payload: {
          id: 'pol_oa_limited',
          name: 'oa-limited',
          effect: 'allow',
          actions: ['reports.export'],
          rate_limit: { per_hour: 1 },
        },
      },
    );
    await ok(
      'PUT /v1/policies/:id',
      { id: review.id },
      {
        payload: {
          id: review.id,
          name: 'oa-refunds',
          effect: 'review',
          actions: ['refunds.create'],
          state: 'enabled',
          priority: 50,
        },
      },
    );
    await ok(
      'POST /v1/policies/validate',
      {},
      { payload: { name: 'oa-check', effect: 'allow', actions: ['orders.read'] } },
    );
    await ok(
      'POST /v1/policies/validate',
      {},
      { payload: { name: 'oa-check', effect: 'allow', actions: ['not an action'] } },
    );
    await ok('GET /v1/policies', {}, { url: '/v1/policies?limit=100' } as never);
    await ok('GET /v1/policies/:id', { id: budgeted.id });
    await ok('GET /v1/policies/:id', { id: budgeted.id }, { headers: { accept: 'application/yaml' } });

    const hook = await ok(
      'POST /v1/webhooks',
      {},
      { payload: { url: `http://127.0.0.1:${closedPort}/oa`, events: ['*'], description: 'openapi answers' } },
    );

    // Decisions of every kind: allow with a permit token and a budget warning, review, deny (several reasons), a conflict.
    const allow = await ok(
      'POST /v1/decisions',
      {},
      {
        payload: {
          agent_id: 'oa-bot',
          action: 'orders.read',
          resource: 'order:1',
          amount: 60,
          context: { channel: 'chat' },
        },
      },
    );
    expect(allow.permit_token).toEqual(expect.any(String));
    const pendingReview = await ok(
      'POST /v1/decisions',
      {},
      { payload: { agent_id: 'oa-bot', action: 'refunds.create', amount: 5 } },
    );
    await ok(
      'POST /v1/decisions',
      {},
      { payload: { agent_id: 'oa-bot', action: 'orders.delete', resource: 'order:2' } },
    );
    await ok('POST /v1/decisions', {}, { payload: { agent_id: 'oa-bot', action: 'nothing.here' } });
    await ok(
      'POST /v1/decisions',
      {},
      { payload: { agent_id: 'oa-bot', action: 'orders.read', resource: 'order:3', amount: 50 } },
    );
    const toConfirm = await ok(
      'POST /v1/decisions',
      {},
      { payload: { agent_id: 'oa-bot-2', action: 'orders.read', resource: 'order:4', amount: 10 } },
    );
    await ok('POST /v1/decisions', {}, { payload: { agent_id: 'oa-bot-3', action: 'reports.export' } });
    await ok('GET /v1/decisions', {}, { url: '/v1/decisions?limit=100' } as never);
    await ok('GET /v1/decisions/:id', { id: allow.id });
    await ok('POST /v1/decisions/:id/confirm', { id: toConfirm.id }, { payload: { amount: 8 } });
    await ok('POST /v1/decisions/:id/confirm', { id: allow.id }); // 60 of 100 consumed: past the threshold
    // What the MCP gateway read in the result (issue 48): the decision with its output.
    await ok(
      'POST /v1/decisions/:id/output',
      { id: allow.id },
      { payload: { labels: ['untrusted'], findings: [{ kind: 'pii', rule: 'email', count: 1, action: 'redact' }] } },
    );
    await ok('POST /v1/decisions/:id/reject', { id: pendingReview.id });
    await ok('POST /v1/permits/verify', {}, { payload: { token: allow.permit_token } });
    // Would it be allowed? The export of everything so far (NDJSON). AuthZEN.
    await ok(
      'POST /v1/decisions/preview',
      {},
      { payload: { agent_id: 'oa-bot', action: 'orders.read', resource: 'order:1', amount: 1 } },
    );
    await ok(
      'POST /v1/actions/possible',
      {},
      { payload: { agent_id: 'oa-bot', actions: ['orders.read', 'nothing.here'] } },
    );
    await ok('GET /v1/decisions/export', {}, {
      url: '/v1/decisions/export?since=2000-01-01T00:00:00.000Z&until=2100-01-01T00:00:00.000Z',
    } as never);
    await ok('GET /.well-known/authzen-configuration', {}, { auth: null });
    const subject = { type: 'agent', id: 'oa-bot' };
    await ok(
      'POST /access/v1/evaluation',
      {},
      {
        payload: {
          subject,
          action: { name: 'orders.read' },
          resource: { type: 'order', id: '7' },
          context: { amount: 1 },
        },
      },
    );
    await ok(
      'POST /access/v1/search/subject',
      {},
      {
        payload: { subject: { type: 'agent' }, action: { name: 'orders.read' }, resource: { type: 'order', id: '7' } },
      },
    );
    await ok(
      'POST /access/v1/search/action',
      {},
      { payload: { subject, resource: { type: 'order', id: '7' }, page: { limit: 5 } } },
    );
    await ok(
      'POST /access/v1/evaluations',
      {},
      {
        payload: {
          subject,
          context: { amount: 1 },
          evaluations: [
            { action: { name: 'orders.read' }, resource: { type: 'order', id: '8' } },
            { action: { name: 'Not.Valid' }, resource: { type: 'order', id: '9' } },
          ],
        },
      },
    );

    // Human review: approval before the action, the queue, a verdict (fires decision.reviewed), the wait, the permit; the overview figures.
    await ok(
      'POST /v1/policies',
      {},
      {
        payload: {
          id: 'pol_oa_approval',
          name: 'oa-approval',
          effect: 'review',
          actions: ['wires.send'],
          approval: { required: true, timeout_seconds: 600 },
        },
      },
    );
    // AuthZEN access requests: a requestable denial, the request (201, a repeat 200, 409 for an allow), its task, approved, used.
    const denial = await ok(
      'POST /access/v1/evaluation',
      {},
      { payload: { subject, action: { name: 'wires.send' }, resource: { type: 'wire', id: '1' } } },
    );
    expect(denial.context.reason).toBe('approval_required');
    const accessRequest = {
      denial: {
        evaluation_id: denial.context.evaluation_id,
        expires_at: denial.context.access_request.expires_at,
        reason: 'approval_required',
      },
      context: { why: 'openapi' },
    };
    await ok('POST /access/v1/requests', {}, { payload: accessRequest });
    await ok('POST /access/v1/requests', {}, { payload: accessRequest });
    expect(
      (await send('POST /access/v1/requests', {}, { payload: { denial: { evaluation_id: allow.id } } })).statusCode,
    ).toBe(409);
    await ok('GET /access/v1/requests/:id', { id: denial.context.id });
    const accessReviewer = await rt.keyWith(['reviews:write']);
    await ok(
      'POST /v1/decisions/:id/review',
      { id: denial.context.id },
      { payload: { verdict: 'approve', reviewer: 'oa-reviewer' }, auth: `Bearer ${accessReviewer}` },
    );
    const task = await ok('GET /access/v1/requests/:id', { id: denial.context.id });
    await ok('GET /v1/decisions/:id', { id: denial.context.id });
    await ok(
      'POST /access/v1/evaluation',
      {},
      {
        payload: {
          subject,
          action: { name: 'wires.send' },
          resource: { type: 'wire', id: '1' },
          context: { approval: task.result.approval },
        },
      },
    );
    const awaiting = await ok('POST /v1/decisions', {}, { payload: { agent_id: 'oa-bot', action: 'wires.send' } });
    expect(awaiting.status).toBe('awaiting_approval');
    await ok('GET /v1/reviews');
    const reviewer = await rt.keyWith(['reviews:read', 'reviews:write']);
    await ok(
      'POST /v1/decisions/:id/review',
      { id: awaiting.id },
      { payload: { verdict: 'approve', reviewer: 'oa-reviewer', note: 'fine' }, auth: `Bearer ${reviewer}` },
    );
    await ok('GET /v1/decisions/:id', { id: awaiting.id }, { url: `/v1/decisions/${awaiting.id}?wait=1` } as never);
    await ok('POST /v1/decisions/:id/permit', { id: awaiting.id });
    await ok('GET /v1/reviews', {}, { url: '/v1/reviews?status=approved' } as never);
    await ok('GET /v1/stats/decisions', {}, { url: '/v1/stats/decisions?minutes=60' } as never);
    await ok('GET /v1/stats/budgets');
    const refused = await ok('POST /v1/decisions', {}, { payload: { agent_id: 'oa-bot', action: 'wires.send' } });
    expect((await send('POST /v1/decisions/:id/permit', { id: refused.id })).statusCode).toBe(409);
    expect(
      (
        await send(
          'POST /v1/decisions/:id/review',
          { id: refused.id },
          { payload: { verdict: 'deny', reviewer: 'me' } },
        )
      ).statusCode,
    ).toBe(403);
    expect(
      (
        await send(
          'POST /v1/decisions/:id/review',
          { id: allow.id },
          { payload: { verdict: 'deny', reviewer: 'x' }, auth: `Bearer ${reviewer}` },
        )
      ).statusCode,
    ).toBe(409);

    // Agents, revoked and restored (a decision in between is denied agent.revoked).
    await ok('GET /v1/agents');
    await ok('GET /v1/agents/:agent_id', { agent_id: 'oa-bot' });
    await ok('PUT /v1/agents/:agent_id', { agent_id: 'oa-bot-3' }, { payload: { attributes: { roles: ['editor'] } } });
    await ok('POST /v1/agents/:agent_id/revoke', { agent_id: 'oa-bot-2' });
    await ok(
      'POST /v1/decisions',
      {},
      { payload: { agent_id: 'oa-bot-2', action: 'orders.read', resource: 'order:5' } },
    );
    await ok('POST /v1/agents/:agent_id/restore', { agent_id: 'oa-bot-2' });
    await ok(
      'POST /v1/sessions/:session_id/labels',
      { session_id: 'oa-run' },
      { payload: { labels: ['private'], agent_id: 'oa-bot', detail: 'read a file' } },
    );
    await ok('GET /v1/sessions/:session_id', { session_id: 'oa-run' });
    await ok('GET /v1/budgets', {}, { url: '/v1/budgets?agent_id=oa-bot' } as never);
    await ok('GET /v1/budgets');
    await ok('GET /v1/budgets/remaining', {}, {
      url: '/v1/budgets/remaining?agent_id=oa-bot&session_id=oa-run&on_behalf_of=oa-user',
    } as never);

    // Deliveries with failed attempts (nothing listens), a replay; every event type there is.
    await rt.services.dispatcher.runOnce();
    const deliveries = await ok('GET /v1/webhooks/:id/deliveries', { id: hook.id });
    expect(deliveries.data.some((d: Json) => d.attempts.length > 0)).toBe(true);
    await ok('POST /v1/webhooks/:id/deliveries/:delivery_id/replay', {
      id: hook.id,
      delivery_id: deliveries.data[0].id,
    });
    const events = await ok('GET /v1/events', {}, { url: '/v1/events?limit=100' } as never);
    const seenTypes = new Set<string>();
    for (const e of events.data as Json[]) {
      if (seenTypes.has(e.type)) continue;
      seenTypes.add(e.type);
      await ok('GET /v1/events/:id', { id: e.id });
    }
    expect([...seenTypes]).toEqual(
      expect.arrayContaining([
        'decision.allow',
        'decision.deny',
        'decision.review',
        'decision.reviewed',
        'agent.registered',
        'agent.revoked',
        'policy.updated',
        'budget.threshold',
      ]),
    );
    await ok('GET /v1/webhooks');
    await ok('GET /v1/webhooks/:id', { id: hook.id });
    await ok('PUT /v1/webhooks/:id', { id: hook.id }, { payload: { status: 'disabled', description: null } });

    // The errors each route can give.
    await errors({ allow: allow.id, policy: budgeted.id, hook: hook.id, delivery: deliveries.data[0].id });

    // Then what removes or replaces things.
    await ok('DELETE /v1/webhooks/:id', { id: hook.id });
    await ok('DELETE /v1/policies/:id', { id: 'pol_oa_deny' });
    await ok('GET /v1/bundle');
    const compiled = compileSources([
      { file: 'oa.yaml', text: 'policies:\n  - id: pol_oa_bundle\n    effect: allow\n    actions: ["orders.read"]\n' },
    ]);
    await ok('PUT /v1/bundle', {}, { payload: createBundle(compiled.table!) as never });

    // The operator API.
    const account = await ok('POST /admin/accounts', {}, { payload: { name: 'oa-account' } });
    await ok('GET /admin/accounts', {}, { url: '/admin/accounts?name=oa-account' });
    const key = await ok(
      'POST /admin/accounts/:account_id/api-keys',
      { account_id: account.id },
      { payload: { environment: 'live', scopes: ['decisions:read'] } },
    );
    const rotated = await ok('POST /admin/api-keys/:id/rotate', { id: key.id });
    await ok('DELETE /admin/api-keys/:id', { id: rotated.id });
    await ok('POST /admin/signing-keys/rotate');
    // POST /admin/clock exists only on an AUTHZ_TEST_CLOCK=1 server: one on the same store.
    const clocked = await openServices({
      config: configFromEnv({ AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN, AUTHZ_TEST_CLOCK: '1' }),
      store: rt.store,
    });
    const clockApp = await buildApp(clocked);
    try {
      docs.clock = json(await clockApp.inject({ method: 'GET', url: '/v1/openapi.json' }));
      validators.clock = documentValidator(docs.clock);
      const app = { inject: (o: InjectOptions) => clockApp.inject(o), name: 'clock' as const };
      const r = await send('POST /admin/clock', {}, { payload: { advance_seconds: 1 } }, app);
      expect(r.statusCode, r.body).toBe(200);
      await send('POST /admin/clock', {}, { payload: { advance_seconds: -1 } }, app);
      await send('POST /admin/clock', {}, { payload: { advance_seconds: 1 }, auth: null }, app);
    } finally {
      await clockApp.close();
      await clocked.limits.idle();
      await clocked.writer.idle();
    }
  }

  /** Per route: what its credentials, path, query and body can get wrong; then the resource's own errors. */
  async function errors(ids: { allow: string; policy: string; hook: string; delivery: string }): Promise<void> {
    const narrow = await rt.keyWith(['permits:verify']);
    const narrowForPermits = await rt.keyWith(['decisions:read']);
    for (const { method, url } of routes) {
      const key = `${method} ${url}`;
      const op = doc.paths[openapiPath(url)]?.[method.toLowerCase()];
      if (!op) continue; // the listing test of openapi.test.ts reports it
      const schemes = (op.security as Json[]).flatMap((s) => Object.keys(s));
      if (schemes.includes('apiKey') || schemes.includes('adminToken')) await send(key, {}, { auth: null });
      if (schemes.includes('apiKey'))
        await send(key, {}, { auth: `Bearer ${url === '/v1/permits/verify' ? narrowForPermits : narrow}` });
      if (url.includes(':')) await send(key, {});
      if ((op.parameters as Json[] | undefined)?.some((p) => p.in === 'query'))
        await send(key, {}, { url: `${url.replace(/:([A-Za-z0-9_]+)/g, '$1_made_up')}?bogus=1` } as never);
      if (WRITES.has(method)) {
        await send(key, {}, { payload: 'hello', headers: { 'content-type': 'text/plain' } });
        await send(key, {}, { payload: '{"unfinished":', headers: { 'content-type': 'application/json' } });
        await send(key, {}, { payload: '{"__proto__":{}}', headers: { 'content-type': 'application/json' } });
      }
    }
    await send('POST /v1/decisions', {}, { payload: { agent_id: 'oa-bot', action: 'not an action' } });
    await send('POST /v1/decisions', {}, { payload: { action: 'orders.read' } });
    await send(
      'POST /v1/decisions',
      {},
      {
        payload: JSON.stringify({
          agent_id: 'oa-bot',
          action: 'orders.read',
          context: { pad: 'x'.repeat(1024 * 1024) },
        }),
        headers: { 'content-type': 'application/json' },
      },
    );
    expect(
      (await send('POST /v1/decisions', {}, { payload: { agent_id: 'oa-bot-3', action: 'reports.export' } }))
        .statusCode,
    ).toBe(429);
    expect((await send('POST /v1/decisions/:id/confirm', { id: ids.allow })).statusCode).toBe(409);
    expect(
      (
        await send(
          'POST /v1/policies',
          {},
          { payload: { id: ids.policy, name: 'oa-again', effect: 'allow', actions: ['orders.read'] } },
        )
      ).statusCode,
    ).toBe(409);
    await send(
      'POST /v1/policies',
      {},
      { payload: 'name: [unclosed', headers: { 'content-type': 'application/yaml' } },
    );
    await send('POST /v1/webhooks/:id/deliveries/:delivery_id/replay', { id: ids.hook });
    await send('POST /v1/permits/verify', {}, { payload: { token: 'e30.e30.e30' } });
    await send('GET /v1/events', {}, { url: '/v1/events?type=no.such_type' } as never);
    await send('GET /v1/events', {}, { url: '/v1/events?starting_after=evt_made_up' } as never);
    await send('POST /admin/accounts/:account_id/api-keys', {}, { payload: { environment: 'test', scopes: ['*'] } });
    const expiring = await ok(
      'POST /v1/decisions',
      {},
      { payload: { agent_id: 'oa-bot-4', action: 'refunds.create', ttl_seconds: 1 } },
    );
    rt.clock.advance(5);
    expect((await send('POST /v1/decisions/:id/reject', { id: expiring.id })).statusCode).toBe(410);
  }

  it('every documented operation was answered with its success status (the scenario covers the API)', () => {
    const missing: string[] = [];
    for (const [name, document] of Object.entries(docs) as Array<[Answer['app'], Json]>) {
      for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
        for (const [method, op] of Object.entries(item)) {
          const success = Number(Object.keys(op.responses).find((s) => /^2\d\d$/.test(s)));
          const key = `${method.toUpperCase()} ${path}`;
          if (!answers.some((a) => a.op === key && a.status === success)) missing.push(`${name}: ${key} ${success}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(docs.clock?.paths['/admin/clock']).toBeDefined();
  });

  it('every answer has its status documented for its operation and validates against that schema', () => {
    const problems: string[] = [];
    for (const a of answers) {
      const [method, path] = a.op.split(' ') as [string, string];
      const op = docs[a.app]!.paths[path]?.[method.toLowerCase()];
      if (!op) {
        problems.push(`${a.what}: no operation ${a.op} in the document`);
        continue;
      }
      const response = op.responses[String(a.status)];
      if (!response) {
        problems.push(`${a.what} -> ${a.status}: status not documented for ${a.op} (${a.body.slice(0, 120)})`);
        continue;
      }
      const media = a.type.split(';')[0]!.trim();
      if (!response.content?.[media]) {
        problems.push(
          `${a.what} -> ${a.status}: answered ${media}, documented ${Object.keys(response.content ?? {}).join(', ')}`,
        );
        continue;
      }
      // NDJSON: each line is a document of the schema.
      const values =
        media === 'application/x-ndjson'
          ? a.body
              .split('\n')
              .filter((line) => line !== '')
              .map((line) => JSON.parse(line) as unknown)
          : [
              media === 'application/json'
                ? JSON.parse(a.body)
                : media === 'application/yaml'
                  ? parseYaml(a.body)
                  : a.body,
            ];
      const validate = validators[a.app]!([
        'paths',
        path,
        method.toLowerCase(),
        'responses',
        String(a.status),
        'content',
        media,
        'schema',
      ]);
      for (const value of values) {
        if (!validate(value))
          problems.push(
            `${a.what} -> ${a.status}: ${JSON.stringify(validate.errors!.slice(0, 3))} in ${JSON.stringify(value).slice(0, 300)}`,
          );
      }
    }
    expect(problems).toEqual([]);
    // Not vacuous: many answers of every class.
    expect(answers.filter((a) => a.status < 300).length).toBeGreaterThan(50);
    expect(new Set(answers.filter((a) => a.status >= 400).map((a) => a.status))).toEqual(
      new Set([400, 401, 403, 404, 409, 410, 413, 415, 429]),
    );
  });

  it('refuses what the document does not describe (the check is not vacuous)', () => {
    const schemaOf = (path: string, method: string, status: number) =>
      validators.main!(['paths', path, method, 'responses', String(status), 'content', 'application/json', 'schema']);
    const decision = JSON.parse(
      answers.find((a) => a.op === 'GET /v1/decisions/{id}' && a.status === 200)!.body,
    ) as Json;
    const policy = JSON.parse(answers.find((a) => a.op === 'GET /v1/policies/{id}' && a.status === 200)!.body) as Json;
    const error = JSON.parse(answers.find((a) => a.status === 404)!.body) as Json;
    const decisionSchema = schemaOf('/v1/decisions/{id}', 'get', 200);
    const policySchema = schemaOf('/v1/policies/{id}', 'get', 200);
    expect(decisionSchema(decision)).toBe(true);
    expect(policySchema(policy)).toBe(true);
    const { effect: _effect, ...noEffect } = decision;
    for (const bad of [
      { ...decision, extra: 1 },
      noEffect,
      { ...decision, effect: 'maybe' },
      { ...decision, evaluated_at: 'yesterday' },
      { ...decision, metadata: { ...decision.metadata, more: [] } },
    ]) {
      expect(decisionSchema(bad), JSON.stringify(bad).slice(0, 120)).toBe(false);
    }
    for (const bad of [
      { ...policy, livemode: 'no' },
      { ...policy, surprise: true },
      { ...policy, budget: { ...policy.budget, unit: 7 } },
    ])
      expect(policySchema(bad)).toBe(false);
    const errorSchema = schemaOf('/v1/decisions/{id}', 'get', 404);
    expect(errorSchema(error)).toBe(true);
    expect(errorSchema({ error: { ...error.error, hint: 'x' } })).toBe(false);
    expect(errorSchema({ code: 'x', message: 'y' })).toBe(false);
  });

  it('lists each error status per operation, the Error schema for each', () => {
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
          if (status === 'default' || Number(status) >= 400)
            expect(response.content['application/json'].schema, `${method} ${path} ${status}`).toEqual({
              $ref: '#/components/schemas/Error',
            });
        }
      }
    }
    const confirm = doc.paths['/v1/decisions/{id}/confirm'].post.responses;
    expect(Object.keys(confirm)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '404', '409', '410', '415', '429', '503', 'default']),
    );
    expect(confirm['404'].description).toContain('decision.not_found');
    expect(Object.keys(doc.paths['/healthz'].get.responses)).toEqual(['200', 'default']);
  });
});
