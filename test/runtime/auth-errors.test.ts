/**
 * Authentication (docs/api.md#authentication-and-environments), the request-id header on
 * every response, the operator API (docs/api.md#operator-api, POST /admin/clock
 * included) and the events API (docs/webhooks-and-events.md#events), on both stores.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock, type Clock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import type { PermitIssuer } from '../../runtime/domain/decision-ports.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { openServices } from '../../runtime/services.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../helpers/postgres.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EventItem, agent, expectError, postDecision } from '../helpers/kit.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const REQ_ID = /^req_[0-9A-Za-z]+$/;
const stubPermits: PermitIssuer = { issue: (d) => `stub-permit.${d.id}` };

const base62 = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[(i * 7 + 3) % 62],
  ).join('');

const admin = (token = ADMIN_TOKEN) => ({ authorization: `Bearer ${token}` });

describe.each(STORE_KINDS)('authentication, request ids, admin API and events (%s)', (kind) => {
  let rt: TestRuntime;

  beforeAll(async () => {
    rt = await startRuntime(kind, { permits: stubPermits });
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
      { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
    ]);
  });
  afterAll(() => rt.close());

  const decide = (
    key: string | null,
    payload: object = { agent_id: agent('auth'), action: 'orders.read' },
    headers: Record<string, string> = {},
  ) => postDecision(rt, payload, key, headers);
  /** Admin: a new key of the main account, with its id. */
  const adminKey = async (environment: 'test' | 'live', scopes: string[], accountId = rt.accountId) => {
    const r = await rt.app.inject({
      method: 'POST',
      url: `/admin/accounts/${accountId}/api-keys`,
      headers: admin(),
      payload: { environment, scopes },
    });
    expect(r.statusCode, r.body).toBe(201);
    return json(r) as { id: string; key: string; environment: string; scopes: string[] };
  };

  describe('API keys', () => {
    it('missing, malformed, unknown keys and other schemes: 401 auth.invalid_key', async () => {
      const unknownTest = `svc_test_sk_${base62(40)}`;
      const unknownLive = `svc_live_sk_${base62(40)}`;
      const headers: Array<[string, Record<string, string>]> = [
        ['no Authorization', {}],
        ['empty', { authorization: '' }],
        ['Bearer alone', { authorization: 'Bearer' }],
        ['Bearer and a space', { authorization: 'Bearer ' }],
        ['Bearer garbage', { authorization: 'Bearer garbage' }],
        ['Bearer two tokens', { authorization: `Bearer ${rt.testKey} ${rt.testKey}` }],
        ['prefix only', { authorization: 'Bearer svc_test_sk_' }],
        ['too short a body', { authorization: `Bearer svc_test_sk_${base62(31)}` }],
        ['non-base62 body', { authorization: `Bearer svc_test_sk_${base62(39)}-` }],
        ['unknown environment', { authorization: `Bearer svc_prod_sk_${base62(40)}` }],
        ['well-formed unknown test key', { authorization: `Bearer ${unknownTest}` }],
        ['well-formed unknown live key', { authorization: `Bearer ${unknownLive}` }],
        [
          'a real key with its last character changed',
          { authorization: `Bearer ${rt.testKey.slice(0, -1)}${rt.testKey.endsWith('a') ? 'b' : 'a'}` },
        ],
        ['a real key truncated', { authorization: `Bearer ${rt.testKey.slice(0, -1)}` }],
        ['a real key without its prefix', { authorization: `Bearer ${rt.testKey.replace('svc_test_sk_', '')}` }],
        ['a test key relabelled live', { authorization: `Bearer ${rt.testKey.replace('svc_test_', 'svc_live_')}` }],
        ['the key without a scheme', { authorization: rt.testKey }],
        ['Basic scheme', { authorization: `Basic ${Buffer.from(`${rt.testKey}:`).toString('base64')}` }],
        ['Basic scheme with the raw key', { authorization: `Basic ${rt.testKey}` }],
        ['Token scheme', { authorization: `Token ${rt.testKey}` }],
        ['the admin token as an API key', admin()],
      ];
      for (const [name, h] of headers) {
        for (const r of [
          await rt.app.inject({
            method: 'POST',
            url: '/v1/decisions',
            headers: h,
            payload: { agent_id: 'x', action: 'orders.read' },
          }),
          await rt.app.inject({ method: 'GET', url: '/v1/events', headers: h }),
        ]) {
          expect(r.statusCode, name).toBe(401);
          expectError(r, 401, 'auth.invalid_key');
        }
      }
    });

    it('the scheme name is case-insensitive', async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
        const r = await rt.app.inject({
          method: 'GET',
          url: '/v1/decisions',
          headers: { authorization: `${scheme} ${rt.testKey}` },
        });
        expect(r.statusCode, scheme).toBe(200);
      }
    });

    it('a revoked key: 401 auth.invalid_key at once, on every route', async () => {
      const created = await adminKey('test', ['*']);
      expect((await decide(created.key)).statusCode).toBe(200); // cached as valid now
      const del = await rt.app.inject({ method: 'DELETE', url: `/admin/api-keys/${created.id}`, headers: admin() });
      expect(del.statusCode, del.body).toBe(200);
      expect(json(del)).toMatchObject({ id: created.id, revoked: true });
      expectError(await decide(created.key), 401, 'auth.invalid_key');
      expectError(await rt.call(created.key, { method: 'GET', url: '/v1/decisions' }), 401, 'auth.invalid_key');
      expectError(await rt.call(created.key, { method: 'GET', url: '/v1/agents' }), 401, 'auth.invalid_key');
      // Still revoked once caches would have expired; revoking again is harmless.
      rt.clock.advance(60);
      expectError(await decide(created.key), 401, 'auth.invalid_key');
      expect(
        (await rt.app.inject({ method: 'DELETE', url: `/admin/api-keys/${created.id}`, headers: admin() })).statusCode,
      ).toBe(200);
      expectError(await decide(created.key), 401, 'auth.invalid_key');
      // Other keys are untouched.
      expect((await decide(rt.testKey)).statusCode).toBe(200);
    });

    it('a revoked live key too', async () => {
      const created = await adminKey('live', ['decisions:write']);
      expect((await decide(created.key)).statusCode).toBe(200);
      expect(
        (await rt.app.inject({ method: 'DELETE', url: `/admin/api-keys/${created.id}`, headers: admin() })).statusCode,
      ).toBe(200);
      expectError(await decide(created.key), 401, 'auth.invalid_key');
      expect((await decide(rt.liveKey)).statusCode).toBe(200);
    });

    it('a key without the scope: 403 auth.scope_insufficient', async () => {
      const readDecisions = await rt.keyWith(['decisions:read']);
      const readPolicies = await rt.keyWith(['policies:read']);
      const writeDecisions = await rt.keyWith(['decisions:write']);
      const nothingUseful = await rt.keyWith(['budgets:read', 'permits:verify', 'webhooks:manage']);

      expectError(await decide(readDecisions), 403, 'auth.scope_insufficient');
      expect((await rt.call(readDecisions, { method: 'GET', url: '/v1/decisions' })).statusCode).toBe(200);
      expectError(
        await rt.call(readPolicies, {
          method: 'POST',
          url: '/v1/policies',
          payload: { name: 'nope', effect: 'allow', actions: ['orders.read'] },
        }),
        403,
        'auth.scope_insufficient',
      );
      expect((await rt.call(readPolicies, { method: 'GET', url: '/v1/policies' })).statusCode).toBe(200);
      expectError(
        await rt.call(readPolicies, {
          method: 'PUT',
          url: '/v1/policies/pol_read',
          payload: { name: 'x', effect: 'deny', actions: ['orders.read'] },
        }),
        403,
        'auth.scope_insufficient',
      );
      expectError(
        await rt.call(readPolicies, { method: 'DELETE', url: '/v1/policies/pol_read' }),
        403,
        'auth.scope_insufficient',
      );

      const d = json(await decide(writeDecisions));
      expect(d.effect).toBe('allow');
      expectError(
        await rt.call(writeDecisions, { method: 'GET', url: `/v1/decisions/${d.id}` }),
        403,
        'auth.scope_insufficient',
      );
      expectError(
        await rt.call(writeDecisions, { method: 'GET', url: '/v1/decisions' }),
        403,
        'auth.scope_insufficient',
      );
      expectError(
        await rt.call(readDecisions, { method: 'POST', url: `/v1/decisions/${d.id}/confirm` }),
        403,
        'auth.scope_insufficient',
      );
      expectError(
        await rt.call(readDecisions, { method: 'POST', url: `/v1/decisions/${d.id}/reject` }),
        403,
        'auth.scope_insufficient',
      );
      expectError(await rt.call(writeDecisions, { method: 'GET', url: '/v1/events' }), 403, 'auth.scope_insufficient');
      for (const [method, url] of [
        ['POST', '/v1/decisions'],
        ['GET', '/v1/decisions'],
        ['GET', '/v1/policies'],
        ['GET', '/v1/agents'],
        ['GET', '/v1/events'],
      ] as const) {
        expectError(
          await rt.call(nothingUseful, {
            method,
            url,
            ...(method === 'POST' ? { payload: { agent_id: 'x', action: 'orders.read' } } : {}),
          }),
          403,
          'auth.scope_insufficient',
        );
      }
      // The refused requests changed nothing.
      expect(json(await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}` })).status).toBe('pending');
      expect((await rt.call(rt.testKey, { method: 'GET', url: '/v1/policies/pol_read' })).statusCode).toBe(200);
    });

    it('authentication comes before body parsing and validation', async () => {
      const readOnly = await rt.keyWith(['decisions:read']);
      const big = JSON.stringify({
        agent_id: 'x',
        action: 'orders.read',
        context: { pad: 'x'.repeat(1024 * 1024 + 10) },
      });
      const ct = { 'content-type': 'application/json' };
      expectError(
        await rt.app.inject({ method: 'POST', url: '/v1/decisions', headers: ct, payload: '{bad' }),
        401,
        'auth.invalid_key',
      );
      expectError(
        await rt.app.inject({ method: 'POST', url: '/v1/decisions', headers: ct, payload: big }),
        401,
        'auth.invalid_key',
      );
      expectError(
        await rt.app.inject({ method: 'POST', url: '/v1/decisions', payload: { action: 'Bad' } }),
        401,
        'auth.invalid_key',
      );
      expectError(
        await rt.call(readOnly, { method: 'POST', url: '/v1/decisions', headers: ct, payload: '{bad' }),
        403,
        'auth.scope_insufficient',
      );
      expectError(
        await rt.call(readOnly, { method: 'POST', url: '/v1/decisions', headers: ct, payload: big }),
        403,
        'auth.scope_insufficient',
      );
    });

    it('test and live keys address separate environments', async () => {
      const a = agent('envsep');
      const t = json(await decide(rt.testKey, { agent_id: a, action: 'orders.read' }));
      const l = json(await decide(rt.liveKey, { agent_id: a, action: 'orders.read' }));
      expect(t).toMatchObject({ livemode: false, effect: 'allow' });
      expect(l).toMatchObject({ livemode: true, effect: 'deny', reason: 'policy.not_found' }); // no live policies
      expectError(
        await rt.call(rt.liveKey, { method: 'GET', url: `/v1/decisions/${t.id}` }),
        404,
        'decision.not_found',
      );
      expectError(
        await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${l.id}` }),
        404,
        'decision.not_found',
      );
    });
  });

  describe('request ids', () => {
    it('every response carries a request-id header req_..., unique per request, equal to error.request_id', async () => {
      const readOnly = await rt.keyWith(['decisions:read']);
      const d = json(await decide(rt.testKey));
      const responses: Array<[string, LightMyRequestResponse, number]> = [
        ['200 decision', await decide(rt.testKey), 200],
        ['200 get', await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}` }), 200],
        ['200 list', await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions?limit=1' }), 200],
        ['200 healthz', await rt.app.inject({ method: 'GET', url: '/healthz' }), 200],
        ['200 readyz', await rt.app.inject({ method: 'GET', url: '/readyz' }), 200],
        [
          '201 admin',
          await rt.app.inject({ method: 'POST', url: '/admin/accounts', headers: admin(), payload: { name: 'rid' } }),
          201,
        ],
        ['400 validation', await decide(rt.testKey, { agent_id: 'x' }), 400],
        [
          '400 invalid json',
          await rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            headers: { 'content-type': 'application/json' },
            payload: '{',
          }),
          400,
        ],
        [
          '400 bad percent-encoding',
          await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions/dec_%E0%A4%A' }),
          400,
        ],
        [
          '400 NUL in a path parameter',
          await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions/dec_%00' }),
          400,
        ],
        [
          '400 NUL in a query parameter',
          await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions?agent_id=a%00' }),
          400,
        ],
        [
          '400 over-long path parameter',
          await rt.call(rt.testKey, { method: 'GET', url: `/v1/agents/${'a'.repeat(5000)}` }),
          400,
        ],
        ['401', await decide(null), 401],
        [
          '401 admin',
          await rt.app.inject({
            method: 'POST',
            url: '/admin/accounts',
            headers: admin('wrong-token-0123456789'),
            payload: { name: 'x' },
          }),
          401,
        ],
        ['403', await decide(readOnly), 403],
        ['404 route', await rt.app.inject({ method: 'GET', url: '/v1/nothing-here' }), 404],
        ['404 route with key', await rt.call(rt.testKey, { method: 'GET', url: '/v2/decisions' }), 404],
        ['404 wrong method', await rt.call(rt.testKey, { method: 'DELETE', url: '/v1/decisions' }), 404],
        ['404 decision', await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions/dec_nope' }), 404],
        [
          '409',
          await (async () => {
            const x = json(await decide(rt.testKey, { agent_id: agent('rid'), action: 'orders.delete' }));
            return rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${x.id}/confirm` });
          })(),
          409,
        ],
        [
          '413',
          await rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            headers: { 'content-type': 'application/json' },
            payload: `{"a":"${'x'.repeat(1024 * 1024)}"}`,
          }),
          413,
        ],
        [
          '415',
          await rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            headers: { 'content-type': 'application/xml' },
            payload: '<agent/>',
          }),
          415,
        ],
      ];
      const ids = new Set<string>();
      for (const [name, r, status] of responses) {
        expect(r.statusCode, `${name}: ${r.body.slice(0, 200)}`).toBe(status);
        const id = r.headers['request-id'];
        expect(id, name).toMatch(REQ_ID);
        ids.add(String(id));
        if (status >= 400) {
          const body = json(r);
          expect(body.error.request_id, name).toBe(id);
          expect(typeof body.error.code, name).toBe('string');
          expect(typeof body.error.message, name).toBe('string');
        }
      }
      expect(ids.size).toBe(responses.length);
      const notFound = json(responses.find(([n]) => n === '404 route')![1]);
      expect(notFound.error.code).toBe('route.not_found');
    });

    it('a request-id sent by the client is not echoed: the service makes its own', async () => {
      const r = await rt.call(rt.testKey, {
        method: 'GET',
        url: '/v1/decisions?limit=1',
        headers: { 'request-id': 'req_client_chosen' },
      });
      expect(r.statusCode).toBe(200);
      expect(r.headers['request-id']).toMatch(REQ_ID);
      expect(r.headers['request-id']).not.toBe('req_client_chosen');
    });
  });

  describe('admin API', () => {
    it('creates accounts and keys: 201 bodies, the full key shown once and usable', async () => {
      const acc = await rt.app.inject({
        method: 'POST',
        url: '/admin/accounts',
        headers: admin(),
        payload: { name: 'acme' },
      });
      expect(acc.statusCode, acc.body).toBe(201);
      const account = json(acc);
      expect(account).toMatchObject({ name: 'acme' });
      expect(account.id).toMatch(/^acc_[0-9A-Za-z]+$/);

      for (const [environment, scopes] of [
        ['test', ['*']],
        ['live', ['decisions:write', 'decisions:read']],
      ] as const) {
        const r = await rt.app.inject({
          method: 'POST',
          url: `/admin/accounts/${account.id}/api-keys`,
          headers: admin(),
          payload: { environment, scopes },
        });
        expect(r.statusCode, r.body).toBe(201);
        const key = json(r);
        expect(key.id).toMatch(/^key_[0-9A-Za-z]+$/);
        expect(key.key).toMatch(new RegExp(`^svc_${environment}_sk_[0-9A-Za-z]{32,}$`));
        expect(key.environment).toBe(environment);
        expect(key.scopes).toEqual(scopes);
        // The key works, in its environment and account.
        const d = await decide(key.key, { agent_id: agent('acme'), action: 'orders.read' });
        expect(d.statusCode, d.body).toBe(200);
        expect(json(d)).toMatchObject({ livemode: environment === 'live', reason: 'policy.not_found' }); // the new account has no policies
        // ...and is not visible to the main account.
        expectError(
          await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${json(d).id}` }),
          404,
          'decision.not_found',
        );
      }
      // Two keys never repeat.
      const k1 = json(
        await rt.app.inject({
          method: 'POST',
          url: `/admin/accounts/${account.id}/api-keys`,
          headers: admin(),
          payload: { environment: 'test', scopes: ['*'] },
        }),
      );
      const k2 = json(
        await rt.app.inject({
          method: 'POST',
          url: `/admin/accounts/${account.id}/api-keys`,
          headers: admin(),
          payload: { environment: 'test', scopes: ['*'] },
        }),
      );
      expect(k1.key).not.toBe(k2.key);
      expect(k1.id).not.toBe(k2.id);
      // The stored record never holds the key itself.
      const stored = await rt.store.sql`select * from api_keys where id = ${k1.id}`;
      expect(JSON.stringify(stored)).not.toContain(k1.key);
    });

    it('a wrong, missing or non-bearer admin token: 401', async () => {
      const tokens: Array<Record<string, string>> = [
        {},
        admin('wrong-token-0123456789'),
        admin(`${ADMIN_TOKEN}x`),
        admin(ADMIN_TOKEN.slice(0, -1)),
        admin(rt.testKey),
        { authorization: ADMIN_TOKEN },
        { authorization: `Basic ${ADMIN_TOKEN}` },
      ];
      for (const headers of tokens) {
        expectError(
          await rt.app.inject({ method: 'POST', url: '/admin/accounts', headers, payload: { name: 'x' } }),
          401,
          'auth.invalid_admin_token',
        );
        expectError(
          await rt.app.inject({
            method: 'POST',
            url: `/admin/accounts/${rt.accountId}/api-keys`,
            headers,
            payload: { environment: 'test', scopes: ['*'] },
          }),
          401,
          'auth.invalid_admin_token',
        );
        expectError(
          await rt.app.inject({ method: 'DELETE', url: '/admin/api-keys/key_whatever', headers }),
          401,
          'auth.invalid_admin_token',
        );
      }
      // The main key still works (nothing was revoked by the attempts).
      expect((await decide(rt.testKey)).statusCode).toBe(200);
    });

    it('invalid bodies: 400; unknown account or key: 404', async () => {
      const post = (url: string, payload: unknown) =>
        rt.app.inject({ method: 'POST', url, headers: admin(), payload: payload as object });
      expectError(await post('/admin/accounts', {}), 400, 'validation.missing_field');
      expectError(await post('/admin/accounts', { name: '' }), 400, 'validation.invalid_field');
      expectError(await post('/admin/accounts', { name: 5 }), 400, 'validation.invalid_field');
      expectError(await post('/admin/accounts', { name: 'x', extra: 1 }), 400, 'validation.invalid_field');
      expectError(
        await rt.app.inject({
          method: 'POST',
          url: '/admin/accounts',
          headers: { ...admin(), 'content-type': 'application/json' },
          payload: '{',
        }),
        400,
        'validation.invalid_json',
      );
      const keys = `/admin/accounts/${rt.accountId}/api-keys`;
      expectError(await post(keys, { scopes: ['*'] }), 400, 'validation.missing_field');
      expectError(await post(keys, { environment: 'test' }), 400, 'validation.missing_field');
      expectError(await post(keys, { environment: 'prod', scopes: ['*'] }), 400, 'validation.invalid_field');
      expectError(await post(keys, { environment: 'test', scopes: [] }), 400, 'validation.invalid_field');
      expectError(await post(keys, { environment: 'test', scopes: ['root'] }), 400, 'validation.invalid_field');
      expectError(await post(keys, { environment: 'test', scopes: '*' }), 400, 'validation.invalid_field');
      expectError(await post(keys, { environment: 'test', scopes: ['*', '*'] }), 400, 'validation.invalid_field');
      expectError(await post(keys, { environment: 'test', scopes: ['*'], name: 'x' }), 400, 'validation.invalid_field');
      expectError(
        await post('/admin/accounts/acc_doesnotexist/api-keys', { environment: 'test', scopes: ['*'] }),
        404,
        'account.not_found',
      );
      expectError(
        await rt.app.inject({ method: 'DELETE', url: '/admin/api-keys/key_doesnotexist', headers: admin() }),
        404,
        'api_key.not_found',
      );
      expectError(await post('/admin/accounts', { name: 'nul\u0000' }), 400, 'validation.invalid_field');
    });

    it('POST /admin/clock does not exist on a server with an explicit clock', async () => {
      expectError(
        await rt.app.inject({
          method: 'POST',
          url: '/admin/clock',
          headers: admin(),
          payload: { advance_seconds: 10 },
        }),
        404,
        'route.not_found',
      );
    });
  });

  describe('events', () => {
    it('GET /v1/events: newest first, envelopes of docs/webhooks-and-events.md#events; decision.deny carries data.decision without a permit token', async () => {
      const a = agent('events');
      const allow = json(await decide(rt.testKey, { agent_id: a, action: 'orders.read', resource: 'order:1' }));
      rt.clock.advance(1);
      const deny = json(await decide(rt.testKey, { agent_id: a, action: 'orders.delete', resource: 'order:2' }));
      rt.clock.advance(1);
      const nf = json(await decide(rt.testKey, { agent_id: a, action: 'nothing.here' }));
      expect([allow.effect, deny.effect, nf.effect]).toEqual(['allow', 'deny', 'deny']);

      const r = await rt.call(rt.testKey, { method: 'GET', url: '/v1/events?limit=10' });
      expect(r.statusCode, r.body).toBe(200);
      const list = json(r);
      expect(list.object).toBe('list');
      expect(typeof list.has_more).toBe('boolean');
      for (const e of list.data) {
        for (const f of ['id', 'type', 'created_at', 'account_id', 'data']) expect(e, f).toHaveProperty(f);
        expect(e.id).toMatch(/^evt_[0-9A-Za-z]+$/);
        expect(e.created_at).toMatch(ISO_MS);
        expect(e.account_id).toBe(rt.accountId);
        expect(e.account_id).toMatch(/^acc_/);
        expect(typeof e.data).toBe('object');
      }
      const times = list.data.map((e: EventItem) => Date.parse(e.created_at));
      expect([...times].sort((x, y) => y - x)).toEqual(times);
      const byDecision = (id: string) => list.data.findIndex((e: EventItem) => e.data.decision?.id === id);
      expect(byDecision(nf.id)).toBeLessThan(byDecision(deny.id));
      expect(byDecision(deny.id)).toBeLessThan(byDecision(allow.id));
      expect(list.data[0].data.decision.id).toBe(nf.id);

      const denyEvent = list.data[byDecision(deny.id)];
      expect(denyEvent.type).toBe('decision.deny');
      expect(denyEvent.created_at).toBe(deny.evaluated_at);
      expect(denyEvent.data.decision).toMatchObject({
        id: deny.id,
        effect: 'deny',
        reason: 'policy.matched',
        agent_id: a,
        action: 'orders.delete',
        resource: 'order:2',
        evaluated_at: deny.evaluated_at,
      });
      expect(denyEvent.data.decision).not.toHaveProperty('permit_token');
      const nfEvent = list.data[byDecision(nf.id)];
      expect(nfEvent).toMatchObject({
        type: 'decision.deny',
        data: { decision: { reason: 'policy.not_found', resource: null } },
      });

      const allowEvent = list.data[byDecision(allow.id)];
      expect(allowEvent.type).toBe('decision.allow');
      expect(allowEvent.data.decision).toMatchObject({ id: allow.id, effect: 'allow', agent_id: a });
      // A permit token is a bearer credential: events (sent to webhooks) never carry it.
      expect(allowEvent.data.decision).not.toHaveProperty('permit_token');
      expect(JSON.stringify(list.data)).not.toContain('stub-permit.');

      // type filter
      const denies = json(await rt.call(rt.testKey, { method: 'GET', url: '/v1/events?type=decision.deny&limit=2' }));
      expect(denies.data.map((e: EventItem) => e.data.decision.id)).toEqual([nf.id, deny.id]);
      expect(denies.has_more).toBe(true);
      const next = json(
        await rt.call(rt.testKey, {
          method: 'GET',
          url: `/v1/events?type=decision.deny&limit=100&starting_after=${denies.data[1].id}`,
        }),
      );
      expect(next.data.every((e: EventItem) => e.type === 'decision.deny')).toBe(true);
      expect(next.data.map((e: EventItem) => e.id)).not.toContain(denies.data[0].id);
      // An unknown type is a bad filter like any other (test/runtime/list-params.test.ts).
      for (const q of ['type=no.such_type', 'limit=0', 'limit=101', 'bogus=1'])
        expectError(
          await rt.call(rt.testKey, { method: 'GET', url: `/v1/events?${q}` }),
          400,
          'validation.invalid_field',
        );
    });

    it('GET /v1/events/:id; foreign, other-environment and unknown ids: 404 event.not_found', async () => {
      const d = json(await decide(rt.testKey, { agent_id: agent('evt-get'), action: 'orders.delete' }));
      const list = json(await rt.call(rt.testKey, { method: 'GET', url: '/v1/events?type=decision.deny&limit=5' }));
      const listed = list.data.find((e: EventItem) => e.data.decision.id === d.id);
      expect(listed).toBeDefined();
      const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/events/${listed.id}` });
      expect(r.statusCode, r.body).toBe(200);
      expect(json(r)).toEqual(listed);

      expectError(
        await rt.call(rt.otherKey, { method: 'GET', url: `/v1/events/${listed.id}` }),
        404,
        'event.not_found',
      );
      expectError(await rt.call(rt.liveKey, { method: 'GET', url: `/v1/events/${listed.id}` }), 404, 'event.not_found');
      expectError(
        await rt.call(rt.testKey, { method: 'GET', url: '/v1/events/evt_doesnotexist' }),
        404,
        'event.not_found',
      );
      const other = json(await rt.call(rt.otherKey, { method: 'GET', url: '/v1/events?limit=100' }));
      expect(other.data.map((e: EventItem) => e.id)).not.toContain(listed.id);
      const otherDecision = json(await decide(rt.otherKey, { agent_id: agent('evt-other'), action: 'orders.read' }));
      const otherEvents = json(await rt.call(rt.otherKey, { method: 'GET', url: '/v1/events?limit=5' }));
      const theirs = otherEvents.data.find((e: EventItem) => e.data.decision?.id === otherDecision.id);
      expect(theirs.account_id).toBe(rt.otherAccountId);
      expectError(await rt.call(rt.testKey, { method: 'GET', url: `/v1/events/${theirs.id}` }), 404, 'event.not_found');

      const noScope = await rt.keyWith(['decisions:read']);
      expectError(await rt.call(noScope, { method: 'GET', url: '/v1/events' }), 403, 'auth.scope_insufficient');
      expectError(
        await rt.call(noScope, { method: 'GET', url: `/v1/events/${listed.id}` }),
        403,
        'auth.scope_insufficient',
      );
      const eventsOnly = await rt.keyWith(['events:read']);
      expect((await rt.call(eventsOnly, { method: 'GET', url: `/v1/events/${listed.id}` })).statusCode).toBe(200);
    });
  });
});

describe.each(STORE_KINDS)('operator API switches (%s)', (kind) => {
  // One store for the three servers below (each built on it with its own configuration).
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(() => store.dispose());

  async function serverWith(env: Record<string, string>, clock?: Clock) {
    const services = await openServices({ config: configFromEnv(env), store, ...(clock ? { clock } : {}) });
    const app = await buildApp(services);
    return {
      services,
      app,
      async close() {
        await app.close();
        await services.writer.idle();
      },
    };
  }

  it('without AUTHZ_ADMIN_TOKEN every admin route answers 404 route.not_found', async () => {
    const server = await serverWith({});
    try {
      expect(server.services.config.adminToken).toBeUndefined();
      const at = new Date();
      const account = await createAccount(store.sql, 'no-admin', at);
      const key = (await createApiKey(store.sql, account.id, 'test', ['*'], at)).key;
      for (const [method, url, payload] of [
        ['POST', '/admin/accounts', { name: 'x' }],
        ['POST', `/admin/accounts/${account.id}/api-keys`, { environment: 'test', scopes: ['*'] }],
        ['DELETE', '/admin/api-keys/key_x', undefined],
        ['POST', '/admin/signing-keys/rotate', {}],
        ['POST', '/admin/clock', { advance_seconds: 1 }],
      ] as const) {
        for (const headers of [{}, admin(), admin('anything-at-all-0123456789')]) {
          const r = await server.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
          expectError(r, 404, 'route.not_found');
        }
      }
      // The rest of the API is unaffected.
      expect(
        (await server.app.inject({ method: 'GET', url: '/v1/decisions', headers: { authorization: `Bearer ${key}` } }))
          .statusCode,
      ).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('the startRuntime switch: config { adminToken: undefined } removes the admin routes too', async () => {
    await createAccount(store.sql, 'main', new Date()); // startRuntime on an existing store reuses the 'main' account
    const rt = await startRuntime(kind, { config: { adminToken: undefined }, store });
    try {
      expectError(
        await rt.app.inject({ method: 'POST', url: '/admin/accounts', headers: admin(), payload: { name: 'x' } }),
        404,
        'route.not_found',
      );
      expect((await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions' })).statusCode).toBe(200);
    } finally {
      await rt.close();
    }
  });

  it('POST /admin/clock exists with a test clock (AUTHZ_TEST_CLOCK=1) and moves clock.now() and decision expiry', async () => {
    const { services, app, close } = await serverWith({ AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN, AUTHZ_TEST_CLOCK: '1' });
    try {
      expect(services.testClock).not.toBeNull();
      const inject = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) =>
        app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
      const acc = json(await inject('POST', '/admin/accounts', admin(), { name: 'clocked' }));
      const key = json(
        await inject('POST', `/admin/accounts/${acc.id}/api-keys`, admin(), { environment: 'test', scopes: ['*'] }),
      ).key as string;
      const bearer = { authorization: `Bearer ${key}` };
      const pol = await inject('POST', '/v1/policies', bearer, {
        name: 'clock-allow',
        effect: 'allow',
        actions: ['orders.read'],
      });
      expect(pol.statusCode, pol.body).toBe(201);
      const d = json(
        await inject('POST', '/v1/decisions', bearer, {
          agent_id: 'clock-agent',
          action: 'orders.read',
          ttl_seconds: 60,
        }),
      );
      expect(d).toMatchObject({ effect: 'allow', status: 'pending' });

      expectError(
        await inject('POST', '/admin/clock', admin('wrong-token-0123456789'), { advance_seconds: 3600 }),
        401,
        'auth.invalid_admin_token',
      );
      expectError(
        await inject('POST', '/admin/clock', admin(), { advance_seconds: -5 }),
        400,
        'validation.invalid_field',
      );
      expectError(await inject('POST', '/admin/clock', admin(), {}), 400, 'validation.missing_field');
      expectError(
        await inject('POST', '/admin/clock', admin(), { advance_seconds: '5' }),
        400,
        'validation.invalid_field',
      );

      // The test clock is the system clock plus an offset: readings bracketed by the
      // wall clock's are exactly an hour ahead of them, however long the requests take.
      const wallBefore = Date.now();
      const before = services.clock.now();
      const r = await inject('POST', '/admin/clock', admin(), { advance_seconds: 3600 });
      expect(r.statusCode, r.body).toBe(200);
      const after = services.clock.now();
      const wallAfter = Date.now();
      expect(before).toBeGreaterThanOrEqual(wallBefore);
      expect(after - before).toBeGreaterThanOrEqual(3600_000);
      expect(after).toBeGreaterThanOrEqual(wallBefore + 3600_000);
      expect(after).toBeLessThanOrEqual(wallAfter + 3600_000);
      expect(json(r).now).toMatch(ISO_MS);
      const now = Date.parse(json(r).now);
      expect(now).toBeGreaterThanOrEqual(wallBefore + 3600_000);
      expect(now).toBeLessThanOrEqual(wallAfter + 3600_000);

      // Time-based behaviour follows it: the decision has expired.
      expectError(await inject('POST', `/v1/decisions/${d.id}/confirm`, bearer), 410, 'decision.expired');
      expect(json(await inject('GET', `/v1/decisions/${d.id}`, bearer)).status).toBe('expired');
      const wallLater = Date.now();
      const later = json(
        await inject('POST', '/v1/decisions', bearer, { agent_id: 'clock-agent', action: 'orders.read' }),
      );
      expect(Date.parse(later.evaluated_at)).toBeGreaterThanOrEqual(wallLater + 3600_000);
    } finally {
      await close();
    }
  });

  it('POST /admin/clock does not exist without AUTHZ_TEST_CLOCK, nor when the clock is given explicitly', async () => {
    const plain = await serverWith({ AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN });
    try {
      expect(plain.services.testClock).toBeNull();
      expectError(
        await plain.app.inject({
          method: 'POST',
          url: '/admin/clock',
          headers: admin(),
          payload: { advance_seconds: 1 },
        }),
        404,
        'route.not_found',
      );
    } finally {
      await plain.close();
    }
    const explicit = await serverWith(
      { AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN, AUTHZ_TEST_CLOCK: '1' },
      new ManualClock(Date.now()),
    );
    try {
      expect(explicit.services.testClock).toBeNull();
      expectError(
        await explicit.app.inject({
          method: 'POST',
          url: '/admin/clock',
          headers: admin(),
          payload: { advance_seconds: 1 },
        }),
        404,
        'route.not_found',
      );
    } finally {
      await explicit.close();
    }
  });
});
