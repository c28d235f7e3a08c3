/**
 * A valid request for each route, on objects that exist (a policy, a pending
 * decision, an agent, an event, a webhook endpoint with a delivery, a permit
 * token): the seeds the fuzzers mutate. A route without an example here is
 * still fuzzed, from an empty body and made-up ids.
 */
import { compileSources, createBundle } from '../../../compiler/index.js';
import { ADMIN_TOKEN, json, type TestRuntime } from '../../runtime/helpers/app.js';
import type { RouteInfo } from './routes.js';

export interface Example {
  params: Record<string, string>;
  query: string;
  body: unknown;
  /** Authorization header value. */
  auth: string;
}

const POLICY = {
  name: 'fuzz-policy',
  description: 'seed of the fuzzer',
  state: 'enabled',
  priority: 10,
  effect: 'allow',
  agents: ['fuzz-*'],
  actions: ['orders.read', 'payments.*'],
  resources: ['order:*'],
  condition: "amount <= 50 && context.channel == 'chat'",
  rate_limit: { per_minute: 1000 },
  budget: { unit: 'USD', limit: 100000, period: 'monthly', threshold_alert: 0.8 },
};

const BUNDLE_YAML = `
policies:
  - id: pol_bundle_a
    effect: allow
    agents: ["fuzz-*"]
    actions: ["orders.read"]
  - id: pol_bundle_b
    effect: deny
    actions: ["orders.delete"]
    condition: "context.tier == 'free'"
`;

export interface Examples {
  forRoute(route: RouteInfo): Example;
}

/** Creates the objects the examples name, through the API. */
export async function prepareExamples(rt: TestRuntime): Promise<Examples> {
  const bearer = `Bearer ${rt.testKey}`;
  const call = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) => {
    const r = await rt.call(rt.testKey, { method, url, ...(payload ? { payload } : {}) });
    if (r.statusCode >= 300) throw new Error(`prepareExamples: ${method} ${url} -> ${r.statusCode} ${r.body}`);
    return json(r);
  };
  const policy = await call('POST', '/v1/policies', POLICY);
  const webhook = await call('POST', '/v1/webhooks', {
    url: 'http://127.0.0.1:9/fuzz',
    events: ['*'],
    description: 'fuzz',
  });
  const decisionBody = {
    agent_id: 'fuzz-agent-1',
    action: 'orders.read',
    resource: 'order:1',
    amount: 5,
    context: { channel: 'chat', n: 1, tags: ['a'] },
    ttl_seconds: 600,
  };
  const decision = await call('POST', '/v1/decisions', decisionBody);
  if (decision.effect !== 'allow') throw new Error(`prepareExamples: the seed decision is ${decision.effect}`);
  // A session with a label (GET /v1/sessions/:session_id reads it).
  await call('POST', '/v1/sessions/fuzz-run-1/labels', {
    labels: ['private'],
    agent_id: 'fuzz-agent-1',
    detail: 'seed',
  });
  const events = await call('GET', '/v1/events?limit=1');
  const deliveries = await call('GET', `/v1/webhooks/${webhook.id}/deliveries?limit=1`);
  const compiled = compileSources([{ file: 'bundle.yaml', text: BUNDLE_YAML }]);
  if (!compiled.table) throw new Error(`prepareExamples: bundle does not compile: ${compiled.diagnostics[0]?.message}`);
  const bundle = createBundle(compiled.table);
  const spareKey = json(
    await rt.app.inject({
      method: 'POST',
      url: `/admin/accounts/${rt.accountId}/api-keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { environment: 'test', scopes: ['events:read'] },
    }),
  );

  const byKey: Record<string, Omit<Example, 'auth'> & { auth?: string }> = {
    'POST /v1/decisions': { params: {}, query: '', body: decisionBody },
    'GET /v1/decisions': {
      params: {},
      query: `limit=5&agent_id=fuzz-agent-1&starting_after=${decision.id}`,
      body: undefined,
    },
    'GET /v1/decisions/:id': { params: { id: decision.id }, query: '', body: undefined },
    'GET /v1/decisions/export': { params: {}, query: 'since=2026-01-01T00:00:00.000Z', body: undefined },
    'POST /v1/decisions/preview': { params: {}, query: '', body: decisionBody },
    'POST /v1/actions/possible': {
      params: {},
      query: '',
      body: { agent_id: 'fuzz-agent-1', actions: ['orders.read'] },
    },
    'POST /v1/decisions/:id/confirm': { params: { id: decision.id }, query: '', body: { amount: 1 } },
    'POST /v1/decisions/:id/reject': { params: { id: decision.id }, query: '', body: {} },
    'POST /v1/policies': { params: {}, query: '', body: { ...POLICY, name: 'fuzz-policy-2' } },
    'GET /v1/policies': { params: {}, query: 'limit=2', body: undefined },
    'GET /v1/policies/:id': { params: { id: policy.id }, query: '', body: undefined },
    'PUT /v1/policies/:id': { params: { id: policy.id }, query: '', body: { ...POLICY, id: policy.id, priority: 11 } },
    'DELETE /v1/policies/:id': { params: { id: policy.id }, query: '', body: undefined },
    'PUT /v1/bundle': { params: {}, query: '', body: bundle },
    'GET /v1/agents': { params: {}, query: 'limit=3', body: undefined },
    'GET /v1/agents/:agent_id': { params: { agent_id: 'fuzz-agent-1' }, query: '', body: undefined },
    'POST /v1/agents/:agent_id/revoke': { params: { agent_id: 'fuzz-agent-1' }, query: '', body: undefined },
    'POST /v1/agents/:agent_id/restore': { params: { agent_id: 'fuzz-agent-1' }, query: '', body: undefined },
    'GET /v1/budgets': { params: {}, query: 'agent_id=fuzz-agent-1', body: undefined },
    'GET /v1/budgets/remaining': { params: {}, query: 'agent_id=fuzz-agent-1&session_id=fuzz-run-1', body: undefined },
    'GET /v1/events': { params: {}, query: 'type=decision.allow&limit=2', body: undefined },
    'GET /v1/events/:id': { params: { id: events.data[0].id }, query: '', body: undefined },
    'POST /v1/webhooks': {
      params: {},
      query: '',
      body: { url: 'http://127.0.0.1:9/other', events: ['decision.deny', 'agent.revoked'], description: 'x' },
    },
    'GET /v1/webhooks': { params: {}, query: '', body: undefined },
    'GET /v1/webhooks/:id': { params: { id: webhook.id }, query: '', body: undefined },
    'PUT /v1/webhooks/:id': {
      params: { id: webhook.id },
      query: '',
      body: { url: 'http://127.0.0.1:9/changed', events: ['*'], description: null, status: 'disabled' },
    },
    'DELETE /v1/webhooks/:id': { params: { id: webhook.id }, query: '', body: undefined },
    'GET /v1/webhooks/:id/deliveries': { params: { id: webhook.id }, query: 'limit=1', body: undefined },
    'POST /v1/webhooks/:id/deliveries/:delivery_id/replay': {
      params: { id: webhook.id, delivery_id: deliveries.data[0].id },
      query: '',
      body: undefined,
    },
    'POST /v1/permits/verify': { params: {}, query: '', body: { token: decision.permit_token } },
    'GET /v1/sessions/:session_id': { params: { session_id: 'fuzz-run-1' }, query: '', body: undefined },
    'POST /v1/sessions/:session_id/labels': {
      params: { session_id: 'fuzz-run-1' },
      query: '',
      body: { labels: ['untrusted'], agent_id: 'fuzz-agent-1' },
    },
    'POST /v1/decisions/:id/output': {
      params: { id: decision.id },
      query: '',
      body: { labels: ['pii'], findings: [{ kind: 'pii', rule: 'email', count: 1, action: 'label' }] },
    },
    'POST /admin/accounts': { params: {}, query: '', body: { name: 'fuzz' }, auth: `Bearer ${ADMIN_TOKEN}` },
    'POST /admin/accounts/:account_id/api-keys': {
      params: { account_id: rt.accountId },
      query: '',
      body: { environment: 'test', scopes: ['decisions:read'] },
      auth: `Bearer ${ADMIN_TOKEN}`,
    },
    'DELETE /admin/api-keys/:id': {
      params: { id: spareKey.id },
      query: '',
      body: undefined,
      auth: `Bearer ${ADMIN_TOKEN}`,
    },
    'POST /admin/signing-keys/rotate': { params: {}, query: '', body: undefined, auth: `Bearer ${ADMIN_TOKEN}` },
  };

  return {
    forRoute(route) {
      const known = byKey[route.key];
      const auth = known?.auth ?? (route.url.startsWith('/admin/') ? `Bearer ${ADMIN_TOKEN}` : bearer);
      if (known) return { ...known, auth };
      return {
        params: Object.fromEntries(route.params.map((p) => [p, 'x_unknown'])),
        query: '',
        body: route.method === 'GET' || route.method === 'HEAD' ? undefined : {},
        auth,
      };
    },
  };
}
