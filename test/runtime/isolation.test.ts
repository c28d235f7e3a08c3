/**
 * Tenant isolation as a property, on both stores: four tenants (two accounts,
 * test and live each) with a policy, a decision under a USD budget, an agent,
 * events, a webhook endpoint and a delivery. For every by-id route the app
 * registers (enumerated, so a new one must be mapped here or this test fails)
 * and random (owner, caller) pairs, the caller addressing the owner's objects
 * gets 404 with the resource's not_found code and the store is unchanged; made-up
 * ids get the same 404: random ones (FC_SEED replays a run; the seed is in the
 * failure message) and `.`, `..`, `%2e`, `%2E%2E`, sent over a real socket as
 * given (inject, like fetch, resolves dot segments first: `.` then arrives as an
 * empty id, the same 404). Lists (budgets included) never show another tenant's ids.
 * (Generalises the decisions-only property that was in decisions.test.ts.)
 */
import { request as httpRequest } from 'node:http';
import type { LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../runtime/domain/accounts.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { expectContractAnswer } from '../fuzz/helpers/contract.js';
import { collectRoutes, fillPath, type RouteInfo } from '../fuzz/helpers/routes.js';
import { stateDigest } from '../fuzz/helpers/state-digest.js';
import { json, START, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

interface TenantObjects {
  name: string;
  key: string;
  decision: string;
  policy: string;
  agent: string;
  event: string;
  webhook: string;
  delivery: string;
  /** The session its decision opened. */
  session: string;
}

const POLICY = { effect: 'allow', actions: ['orders.read'], budget: { unit: 'USD', limit: 1000, period: 'monthly' } };

/** What a by-id route addresses: its path values from a tenant's objects, the expected code, a valid body. */
interface Target {
  params(owner: TenantObjects, caller: TenantObjects): Record<string, string>;
  code: string;
  body?: (owner: TenantObjects) => object;
}

/**
 * By-id routes that create what they name (an upsert): another tenant's id names
 * nothing here, so the caller's own object of that id is made, the owner's is
 * untouched (test/runtime/agent-attributes.test.ts checks both).
 */
const UPSERTS: ReadonlySet<string> = new Set(['PUT /v1/agents/:agent_id', 'POST /v1/sessions/:session_id/labels']);

/** Every by-id route under /v1, by its registered URL (a replay has two: a foreign endpoint, or a foreign delivery under the caller's own endpoint). */
const TARGETS: Record<string, Target[]> = {
  'GET /v1/decisions/:id': [{ params: (o) => ({ id: o.decision }), code: 'decision.not_found' }],
  'POST /v1/decisions/:id/confirm': [
    { params: (o) => ({ id: o.decision }), code: 'decision.not_found', body: () => ({ amount: 1 }) },
  ],
  'POST /v1/decisions/:id/reject': [
    { params: (o) => ({ id: o.decision }), code: 'decision.not_found', body: () => ({}) },
  ],
  'POST /v1/decisions/:id/review': [
    {
      params: (o) => ({ id: o.decision }),
      code: 'decision.not_found',
      body: () => ({ verdict: 'approve', reviewer: 'mallory' }),
    },
  ],
  'POST /v1/decisions/:id/permit': [
    { params: (o) => ({ id: o.decision }), code: 'decision.not_found', body: () => ({}) },
  ],
  'POST /v1/decisions/:id/output': [
    {
      params: (o) => ({ id: o.decision }),
      code: 'decision.not_found',
      body: () => ({ labels: ['pii'], findings: [] }),
    },
  ],
  'GET /v1/sessions/:session_id': [{ params: (o) => ({ session_id: o.session }), code: 'session.not_found' }],
  'GET /v1/policies/:id': [{ params: (o) => ({ id: o.policy }), code: 'policy.not_found' }],
  'PUT /v1/policies/:id': [
    {
      params: (o) => ({ id: o.policy }),
      code: 'policy.not_found',
      body: (o) => ({ ...POLICY, id: o.policy, name: 'taken-over' }),
    },
  ],
  'DELETE /v1/policies/:id': [{ params: (o) => ({ id: o.policy }), code: 'policy.not_found' }],
  'GET /v1/agents/:agent_id': [{ params: (o) => ({ agent_id: o.agent }), code: 'agent.not_found' }],
  'POST /v1/agents/:agent_id/revoke': [{ params: (o) => ({ agent_id: o.agent }), code: 'agent.not_found' }],
  'POST /v1/agents/:agent_id/restore': [{ params: (o) => ({ agent_id: o.agent }), code: 'agent.not_found' }],
  'GET /v1/events/:id': [{ params: (o) => ({ id: o.event }), code: 'event.not_found' }],
  'GET /v1/webhooks/:id': [{ params: (o) => ({ id: o.webhook }), code: 'webhook.not_found' }],
  'PUT /v1/webhooks/:id': [
    {
      params: (o) => ({ id: o.webhook }),
      code: 'webhook.not_found',
      body: () => ({ status: 'disabled', url: 'https://127.0.0.1:9/stolen' }),
    },
  ],
  'DELETE /v1/webhooks/:id': [{ params: (o) => ({ id: o.webhook }), code: 'webhook.not_found' }],
  'GET /v1/webhooks/:id/deliveries': [{ params: (o) => ({ id: o.webhook }), code: 'webhook.not_found' }],
  'POST /v1/webhooks/:id/deliveries/:delivery_id/replay': [
    { params: (o) => ({ id: o.webhook, delivery_id: o.delivery }), code: 'webhook.not_found' },
    { params: (o, c) => ({ id: c.webhook, delivery_id: o.delivery }), code: 'delivery.not_found' },
  ],
};

const enc = (params: Record<string, string>) =>
  Object.fromEntries(Object.entries(params).map(([k, v]) => [k, encodeURIComponent(v)]));

describe.each(STORE_KINDS)('tenant isolation (%s store)', (kind) => {
  let rt: TestRuntime;
  let byId: RouteInfo[];
  let lists: RouteInfo[];
  let tenants: TenantObjects[];
  let port: number;

  beforeAll(async () => {
    const collector = collectRoutes();
    // Live endpoints need https; loopback is allowed for the test (nothing is delivered: the dispatcher is not started).
    rt = await startRuntime(kind, { app: { onRoute: collector.onRoute }, config: { webhookAllowPrivate: true } });
    const v1 = collector.routes.filter((r) => r.url.startsWith('/v1/') && r.method !== 'HEAD');
    byId = v1.filter((r) => r.params.length > 0 && !UPSERTS.has(r.key));
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    port = (rt.app.server.address() as { port: number }).port;
    lists = v1.filter((r) => r.params.length === 0 && r.method === 'GET');
    const otherLive = (await createApiKey(rt.store.sql, rt.otherAccountId, 'live', ['*'], new Date(START))).key;
    const keys: Array<[string, string]> = [
      ['main/test', rt.testKey],
      ['main/live', rt.liveKey],
      ['other/test', rt.otherKey],
      ['other/live', otherLive],
    ];
    tenants = [];
    for (const [name, key] of keys) {
      const call = async (method: 'GET' | 'POST', url: string, payload?: object) => {
        const r = await rt.call(key, { method, url, ...(payload ? { payload } : {}) });
        expect(r.statusCode, `${name} ${method} ${url}: ${r.body}`).toBeLessThan(300);
        return json(r);
      };
      const webhook = await call('POST', '/v1/webhooks', { url: 'https://127.0.0.1:9/iso', events: ['*'] });
      const policy = await call('POST', '/v1/policies', { ...POLICY, name: `iso-${name.replace('/', '-')}` });
      const agent = `iso-agent-${name.replace('/', '-')}`;
      const session = `iso-session-${name.replace('/', '-')}`;
      const decision = await call('POST', '/v1/decisions', {
        agent_id: agent,
        action: 'orders.read',
        amount: 5,
        session_id: session,
      });
      expect(decision.effect).toBe('allow');
      const event = (await call('GET', '/v1/events?limit=1')).data[0].id;
      const delivery = (await call('GET', `/v1/webhooks/${webhook.id}/deliveries?limit=1`)).data[0].id;
      tenants.push({
        name,
        key,
        decision: decision.id,
        policy: policy.id,
        agent,
        event,
        webhook: webhook.id,
        delivery,
        session,
      });
    }
  });
  afterAll(() => rt?.close());

  it('every by-id route under /v1 is mapped to the object it addresses', () => {
    const unmapped = byId.map((r) => r.key).filter((k) => !TARGETS[k]);
    expect(unmapped, 'add these routes to TARGETS').toEqual([]);
    expect(byId.length).toBeGreaterThanOrEqual(Object.keys(TARGETS).length);
  });

  it("another tenant's objects answer 404 <resource>.not_found on every by-id route, and nothing changes (property)", async () => {
    const cases = byId.flatMap((route) => (TARGETS[route.key] ?? []).map((target) => ({ route, target })));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...cases),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: 3 }),
        async ({ route, target }, ownerIndex, shift) => {
          const owner = tenants[ownerIndex]!;
          const caller = tenants[(ownerIndex + shift) % 4]!;
          const before = await stateDigest(rt.store.sql);
          const url = fillPath(route, enc(target.params(owner, caller)));
          const what = `${caller.name} ${route.method} ${url} (owner ${owner.name})`;
          const r = await rt.call(caller.key, {
            method: route.method as 'GET',
            url,
            ...(target.body ? { payload: target.body(owner) } : {}),
          });
          expect(r.statusCode, `${what}: ${r.body}`).toBe(404);
          expect(expectContractAnswer(r, what)).toBe(target.code);
          expect(await stateDigest(rt.store.sql), `${what} changed the store`).toEqual(before);
        },
      ),
      { numRuns: 120 },
    );
  });

  it('the owner still reaches every object (the 404s above are isolation, not absence)', async () => {
    for (const t of tenants) {
      for (const url of [
        `/v1/decisions/${t.decision}`,
        `/v1/policies/${t.policy}`,
        `/v1/agents/${t.agent}`,
        `/v1/events/${t.event}`,
        `/v1/webhooks/${t.webhook}`,
      ]) {
        const r = await rt.call(t.key, { method: 'GET', url });
        expect(r.statusCode, `${t.name} ${url}`).toBe(200);
      }
    }
  });

  /**
   * A request over a real socket with the path exactly as given: `.` and `..`
   * segments reach the server as sent (inject, like fetch and browsers, would
   * resolve them on the client first: see the WHATWG case below).
   */
  async function raw(key: string, method: string, path: string, payload?: object): Promise<LightMyRequestResponse> {
    const body = payload === undefined ? undefined : JSON.stringify(payload);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          agent: false,
          headers: {
            authorization: `Bearer ${key}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({
              statusCode: res.statusCode!,
              headers: res.headers,
              body: text,
            } as unknown as LightMyRequestResponse),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** One made-up id (already in URL form) on one by-id route: the resource's 404 (a PUT policy body may be refused first: 400), nothing changed. */
  async function expectMadeUpNotFound(
    route: RouteInfo,
    target: Target,
    callerIndex: number,
    segment: string,
    id = segment,
  ): Promise<void> {
    const caller = tenants[callerIndex]!;
    const fake: TenantObjects = {
      ...caller,
      decision: id,
      policy: id,
      agent: id,
      event: id,
      webhook: id,
      delivery: id,
      session: id,
    };
    const values = Object.fromEntries(
      Object.entries(target.params(fake, caller)).map(([k, v]) => [k, v === id ? segment : encodeURIComponent(v)]),
    );
    const url = fillPath(route, values);
    const before = await stateDigest(rt.store.sql);
    const r = await raw(caller.key, route.method, url, target.body?.(fake));
    const code = expectContractAnswer(r, `${route.method} ${url}`);
    if (r.statusCode === 400) expect(route.key, `${route.method} ${url}: ${r.body}`).toBe('PUT /v1/policies/:id');
    else {
      expect(r.statusCode, `${route.method} ${url}: ${r.body}`).toBe(404);
      expect(code, `${route.method} ${url}`).toBe(target.code);
    }
    expect(await stateDigest(rt.store.sql), `${route.method} ${url} changed the store`).toEqual(before);
  }

  it('made-up ids answer the same 404 on every by-id route (property; FC_SEED=<seed> replays a run)', async () => {
    const cases = byId.flatMap((route) => (TARGETS[route.key] ?? []).map((target) => ({ route, target })));
    const id = fc.oneof(
      fc.stringMatching(/^(dec|pol|evt|we|whd)_[0-9A-Za-z]{1,24}$/),
      fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/[\u0000\ud800-\udfff]/.test(s)),
    );
    const seed = process.env.FC_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FC_SEED);
    const result = await fc.check(
      fc.asyncProperty(
        fc.constantFrom(...cases),
        id,
        fc.integer({ min: 0, max: 3 }),
        ({ route, target }, made, callerIndex) =>
          expectMadeUpNotFound(route, target, callerIndex, encodeURIComponent(made), made),
      ),
      { numRuns: 120, seed },
    );
    expect(result.failed, `replay with FC_SEED=${seed}\n${fc.defaultReportMessage(result) ?? ''}`).toBe(false);
  });

  it("`.`, `..`, `%2e`, `%2E%2E` (and an empty id) as ids: the resource's 404 on every by-id route, sent as is", async () => {
    const cases = byId.flatMap((route) => (TARGETS[route.key] ?? []).map((target) => ({ route, target })));
    for (const [segment, id] of [
      ['.', '.'],
      ['..', '..'],
      ['%2e', '.'],
      ['%2E%2E', '..'],
      ['.%2E', '..'],
      ['', ''],
    ]) {
      for (const { route, target } of cases) await expectMadeUpNotFound(route, target, 0, segment!, id!);
    }
  });

  it('through a client that resolves dot segments (inject, as fetch): `.` as the last segment is an empty id, the same 404; elsewhere a 404 too', async () => {
    const caller = tenants[0]!;
    for (const { route, target } of byId.flatMap((r) => (TARGETS[r.key] ?? []).map((t) => ({ route: r, target: t })))) {
      for (const segment of ['.', '%2e', '..', '%2E%2E']) {
        const fake: TenantObjects = {
          ...caller,
          decision: '\0',
          policy: '\0',
          agent: '\0',
          event: '\0',
          webhook: '\0',
          delivery: '\0',
          session: '\0',
        };
        const values = Object.fromEntries(
          Object.entries(target.params(fake, caller)).map(([k, v]) => [
            k,
            v === '\0' ? segment : encodeURIComponent(v),
          ]),
        );
        const url = fillPath(route, values);
        const r = await rt.call(caller.key, {
          method: route.method as 'GET',
          url,
          ...(target.body ? { payload: target.body({ ...fake, policy: '' }) } : {}),
        });
        const code = expectContractAnswer(r, `${route.method} ${url}`);
        if (route.key === 'PUT /v1/policies/:id' && r.statusCode === 400) continue;
        expect(r.statusCode, `${route.method} ${url}: ${r.body}`).toBe(404);
        const last = route.url.endsWith(`:${route.params.at(-1)}`) && url.endsWith(`/${segment}`);
        if (last && (segment === '.' || segment === '%2e')) expect(code, `${route.method} ${url}`).toBe(target.code);
      }
    }
  });

  it("lists never show another tenant's objects, budgets included", async () => {
    for (const caller of tenants) {
      for (const route of lists) {
        for (const owner of tenants.filter((t) => t !== caller)) {
          const queries = ['', 'limit=100', `agent_id=${encodeURIComponent(owner.agent)}`];
          for (const q of queries) {
            const r = await rt.call(caller.key, { method: 'GET', url: `${route.url}${q ? `?${q}` : ''}` });
            if (r.statusCode === 400) continue; // a list that takes no agent_id
            expect(r.statusCode, `${caller.name} ${route.url}?${q}: ${r.body.slice(0, 200)}`).toBe(200);
            // With agent_id=<their agent> the caller's own budgets list that id at zero use: only the other ids count there.
            const ids = [
              owner.decision,
              owner.policy,
              owner.event,
              owner.webhook,
              owner.delivery,
              ...(q.startsWith('agent_id') ? [] : [owner.agent]),
            ];
            for (const id of ids)
              expect(r.body.includes(id), `${caller.name} ${route.url}?${q} shows ${owner.name}'s ${id}`).toBe(false);
            if (route.url === '/v1/budgets') {
              for (const b of json(r).data.filter((x: JsonObject) => x.agent_id === owner.agent))
                expect([Number(b.consumed), Number(b.held)], `${caller.name} sees ${owner.name}'s spend`).toEqual([
                  0, 0,
                ]);
            }
          }
        }
      }
      // Its own budget is listed (the check above is not vacuous).
      const own = json(
        await rt.call(caller.key, { method: 'GET', url: `/v1/budgets?agent_id=${encodeURIComponent(caller.agent)}` }),
      );
      expect(own.data.map((b: JsonObject) => b.policy_id)).toContain(caller.policy);
    }
  });
});
