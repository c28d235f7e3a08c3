/**
 * How every route reads a request body (runtime/http/json-body.ts, media-type.ts),
 * on both stores, over the routes the app registers (enumerated with onRoute; a
 * route takes a body when the OpenAPI document gives it a requestBody):
 *
 * - an empty body sent as application/json is no body: every route that takes
 *   none (revoke, restore, replay, DELETE, rotations; confirm and reject, whose
 *   body is optional) does its work, and a route that needs a body answers
 *   exactly what it answers when no body is sent at all;
 * - a body of another media type (text/plain, a form) is 415
 *   validation.unsupported_media_type naming what is read (YAML too on the
 *   policy routes);
 * - a `__proto__` field, or `constructor.prototype`, anywhere in valid JSON is
 *   400 validation.invalid_field whose details[].path is that field's JSON
 *   pointer; nothing changes and no prototype is touched.
 */
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { expectContractAnswer } from '../fuzz/helpers/contract.js';
import { prepareExamples, type Examples } from '../fuzz/helpers/examples.js';
import { collectRoutes, fillPath, type RouteInfo } from '../fuzz/helpers/routes.js';
import { stateDigest } from '../fuzz/helpers/state-digest.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

/** Status and body of an answer, the request id left out. */
function withoutRequestId(r: LightMyRequestResponse): { status: number; body: unknown } {
  const body = json(r);
  if (body.error) delete body.error.request_id;
  return { status: r.statusCode, body };
}

const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A fresh object for a route that takes no body, and what must hold once the route has run on it. */
interface Target {
  params: Record<string, string>;
  auth: string;
  check(r: LightMyRequestResponse): Promise<void>;
}

describe.each(STORE_KINDS)('request bodies (%s store)', (kind) => {
  let rt: TestRuntime;
  let routes: RouteInfo[];
  let examples: Examples;
  /** `METHOD /path/{param}` -> its requestBody in the OpenAPI document (undefined: the route takes no body). */
  let requestBodies: Map<string, { required?: boolean } | undefined>;
  let n = 0;
  const unique = (tag: string) => `${tag}-${kind}-${++n}`;
  const admin = `Bearer ${ADMIN_TOKEN}`;

  beforeAll(async () => {
    const collector = collectRoutes();
    rt = await startRuntime(kind, { app: { onRoute: collector.onRoute } });
    routes = collector.routes.filter((r) => WRITES.has(r.method));
    examples = await prepareExamples(rt);
    const doc = json(await rt.app.inject({ method: 'GET', url: '/v1/openapi.json' }));
    requestBodies = new Map(
      routes.map((r) => [r.key, doc.paths[openapiPath(r.url)]?.[r.method.toLowerCase()]?.requestBody]),
    );
    await ok('POST', '/v1/policies', {
      id: 'pol_bodies_allow',
      name: 'bodies-allow',
      effect: 'allow',
      actions: ['bodies.read'],
    });
  });
  afterAll(() => rt?.close());

  const inject = (route: RouteInfo, params: Record<string, string>, auth: string, extra: InjectOptions = {}) =>
    rt.app.inject({
      method: route.method as 'POST',
      url: fillPath(route, params),
      ...extra,
      headers: { authorization: auth, ...(extra.headers ?? {}) },
    });

  async function ok(
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    payload?: object,
    auth = `Bearer ${rt.testKey}`,
  ): Promise<JsonObject> {
    const r = await rt.app.inject({ method, url, headers: { authorization: auth }, ...(payload ? { payload } : {}) });
    expect(r.statusCode, `${method} ${url}: ${r.body}`).toBeLessThan(300);
    return json(r);
  }
  const bearer = () => `Bearer ${rt.testKey}`;
  const statusOf = async (url: string, auth = bearer()) =>
    (await rt.app.inject({ method: 'GET', url, headers: { authorization: auth } })).statusCode;

  /** A pending allow (the policy allowing bodies.read is created in beforeAll). */
  async function pendingDecision(): Promise<string> {
    const d = await ok('POST', '/v1/decisions', { agent_id: unique('bodies-agent'), action: 'bodies.read', amount: 3 });
    expect(d.status).toBe('pending');
    return d.id as string;
  }

  /** Every route that takes no body (or an optional one) and how to run it on a fresh object. */
  const TARGETS: Record<string, () => Promise<Target>> = {
    'POST /v1/agents/:agent_id/revoke': async () => {
      const agent = (await ok('POST', '/v1/decisions', { agent_id: unique('bodies-agent'), action: 'bodies.read' }))
        .agent_id as string;
      return {
        params: { agent_id: agent },
        auth: bearer(),
        check: async (r) => {
          expect(json(r).status).toBe('revoked');
          expect((await ok('GET', `/v1/agents/${agent}`)).status).toBe('revoked');
        },
      };
    },
    'POST /v1/agents/:agent_id/restore': async () => {
      const agent = (await ok('POST', '/v1/decisions', { agent_id: unique('bodies-agent'), action: 'bodies.read' }))
        .agent_id as string;
      await ok('POST', `/v1/agents/${agent}/revoke`);
      return {
        params: { agent_id: agent },
        auth: bearer(),
        check: async () => expect((await ok('GET', `/v1/agents/${agent}`)).status).toBe('active'),
      };
    },
    'DELETE /v1/policies/:id': async () => {
      const policy = await ok('POST', '/v1/policies', {
        name: unique('bodies-policy'),
        effect: 'deny',
        actions: ['bodies.delete'],
      });
      return {
        params: { id: policy.id },
        auth: bearer(),
        check: async () => expect(await statusOf(`/v1/policies/${policy.id}`)).toBe(404),
      };
    },
    'DELETE /v1/webhooks/:id': async () => {
      const hook = await ok('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/bodies', events: ['*'] });
      return {
        params: { id: hook.id },
        auth: bearer(),
        check: async () => expect(await statusOf(`/v1/webhooks/${hook.id}`)).toBe(404),
      };
    },
    'POST /v1/webhooks/:id/deliveries/:delivery_id/replay': async () => {
      const hook = await ok('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/bodies', events: ['decision.allow'] });
      await pendingDecision();
      const delivery = (await ok('GET', `/v1/webhooks/${hook.id}/deliveries?limit=1`)).data[0].id as string;
      return {
        params: { id: hook.id, delivery_id: delivery },
        auth: bearer(),
        check: async (r) => {
          expect(json(r)).toMatchObject({ object: 'webhook_delivery', replay_of: delivery });
          expect((await ok('GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).data).toHaveLength(2);
        },
      };
    },
    'POST /v1/decisions/:id/confirm': async () => {
      const id = await pendingDecision();
      return {
        params: { id },
        auth: bearer(),
        check: async () => expect((await ok('GET', `/v1/decisions/${id}`)).status).toBe('confirmed'),
      };
    },
    'POST /v1/decisions/:id/reject': async () => {
      const id = await pendingDecision();
      return {
        params: { id },
        auth: bearer(),
        check: async () => expect((await ok('GET', `/v1/decisions/${id}`)).status).toBe('rejected'),
      };
    },
    'POST /v1/decisions/:id/permit': async () => {
      const id = await pendingDecision();
      return { params: { id }, auth: bearer(), check: async (r) => expect(json(r).permit_token).toMatch(/^eyJ/) };
    },
    'DELETE /admin/api-keys/:id': async () => {
      const created = await ok(
        'POST',
        `/admin/accounts/${rt.accountId}/api-keys`,
        { environment: 'test', scopes: ['*'] },
        admin,
      );
      expect(await statusOf('/v1/policies', `Bearer ${created.key}`)).toBe(200);
      return {
        params: { id: created.id },
        auth: admin,
        check: async () => expect(await statusOf('/v1/policies', `Bearer ${created.key}`)).toBe(401),
      };
    },
    'POST /admin/api-keys/:id/rotate': async () => {
      const created = await ok(
        'POST',
        `/admin/accounts/${rt.accountId}/api-keys`,
        { environment: 'test', scopes: ['*'] },
        admin,
      );
      return {
        params: { id: created.id },
        auth: admin,
        check: async (r) => {
          expect(await statusOf('/v1/policies', `Bearer ${created.key}`)).toBe(401);
          expect(await statusOf('/v1/policies', `Bearer ${json(r).key}`)).toBe(200);
        },
      };
    },
    'POST /admin/signing-keys/rotate': async () => {
      const before = (await ok('GET', '/.well-known/jwks.json')).keys.length as number;
      return {
        params: {},
        auth: admin,
        check: async (r) => {
          const keys = (await ok('GET', '/.well-known/jwks.json')).keys as Array<{ kid: string }>;
          expect(keys).toHaveLength(before + 1);
          expect(keys.map((k) => k.kid)).toContain(json(r).kid);
        },
      };
    },
  };

  const takesNoBody = (r: RouteInfo) => {
    const body = requestBodies.get(r.key);
    return body === undefined || body.required === false;
  };

  it('every route that takes no body (or an optional one) is mapped here', () => {
    const bodyless = routes.filter(takesNoBody).map((r) => r.key);
    expect(
      bodyless.filter((k) => !TARGETS[k]),
      'add these routes to TARGETS',
    ).toEqual([]);
    expect(bodyless.length).toBeGreaterThanOrEqual(8);
  });

  it('an empty body sent as application/json is no body: each body-less route does its work', async () => {
    const variants: Array<[string, InjectOptions]> = [
      ['empty, application/json', { headers: { 'content-type': 'application/json' }, payload: '' }],
      [
        'whitespace, application/json; charset=utf-8',
        { headers: { 'content-type': 'application/json; charset=utf-8' }, payload: ' \r\n' },
      ],
      ['no body, no Content-Type', {}],
    ];
    for (const route of routes.filter(takesNoBody)) {
      for (const [what, options] of variants) {
        const target = await TARGETS[route.key]!();
        const r = await inject(route, target.params, target.auth, options);
        expectContractAnswer(r, `${route.key} ${what}`);
        expect(r.statusCode, `${route.key} ${what}: ${r.body}`).toBeLessThan(300);
        await target.check(r);
      }
    }
  });

  it('a route that needs a body answers an empty application/json body as it answers no body', async () => {
    const needing = routes.filter((r) => !takesNoBody(r));
    expect(needing.map((r) => r.key)).toEqual(
      expect.arrayContaining(['POST /v1/decisions', 'POST /v1/policies', 'PUT /v1/bundle', 'POST /admin/accounts']),
    );
    for (const route of needing) {
      const ex = examples.forRoute(route);
      const before = await stateDigest(rt.store.sql);
      const none = await inject(route, ex.params, ex.auth);
      const empty = await inject(route, ex.params, ex.auth, {
        headers: { 'content-type': 'application/json' },
        payload: '',
      });
      const codeOfNone = expectContractAnswer(none, `${route.key} without a body`);
      expect(expectContractAnswer(empty, `${route.key} empty JSON body`), route.key).toBe(codeOfNone);
      // The same answer (POST /v1/policies/validate answers 200 with its diagnostics; the others an error).
      expect(withoutRequestId(empty), route.key).toEqual(withoutRequestId(none));
      if (route.key === 'POST /v1/decisions') expect(codeOfNone).toBe('validation.missing_field');
      expect(await stateDigest(rt.store.sql), route.key).toEqual(before);
    }
  });

  it('text/plain and a form body are 415 validation.unsupported_media_type on every route that writes (AuthZEN: read as JSON, 400)', async () => {
    for (const route of routes) {
      const ex = examples.forRoute(route);
      for (const [type, payload] of [
        ['text/plain', 'hello'],
        ['text/plain; charset=utf-8', '{"looks":"like json"}'],
        ['application/x-www-form-urlencoded', 'a=1&b=2'],
      ] as const) {
        const r = await inject(route, ex.params, ex.auth, { headers: { 'content-type': type }, payload });
        if (route.url.startsWith('/access/v1/')) {
          // AuthZEN routes read any body as JSON (docs/api.md#post-accessv1evaluation): never 415.
          const expected = payload.startsWith('{') ? 'validation.missing_field' : 'validation.invalid_json';
          expect(expectContractAnswer(r, `${route.key} as ${type}`), `${route.key} as ${type}: ${r.body}`).toBe(
            expected,
          );
          continue;
        }
        expect(expectContractAnswer(r, `${route.key} as ${type}`), `${route.key} as ${type}: ${r.body}`).toBe(
          'validation.unsupported_media_type',
        );
        const message = json(r).error.message as string;
        expect(message, route.key).toContain('application/json');
        if (route.url.startsWith('/v1/policies')) expect(message, route.key).toContain('application/yaml');
        else expect(message, route.key).not.toContain('yaml');
      }
    }
  });

  it('__proto__ and constructor.prototype in valid JSON: 400 validation.invalid_field naming the path, on every route that writes', async () => {
    const poisoned = (ex: unknown): Array<[string, string]> => {
      const fields =
        ex !== null && typeof ex === 'object' && !Array.isArray(ex) && Object.keys(ex).length > 0
          ? JSON.stringify(ex).slice(1, -1)
          : '';
      const withFields = (extra: string) => `{${fields ? `${fields},` : ''}${extra}}`;
      return [
        [withFields('"__proto__":{"polluted":1}'), '/__proto__'],
        [withFields('"x":{"list":[1,{"__proto__":{"polluted":1}}]}'), '/x/list/1/__proto__'],
        [withFields('"constructor":{"prototype":{"polluted":1}}'), '/constructor/prototype'],
        // Spelled with escapes: the same key once parsed.
        [withFields('"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":1}'), '/__proto__'],
        [withFields('"a/b~c":{"__proto__":null}'), '/a~1b~0c/__proto__'],
      ];
    };
    for (const route of routes) {
      const ex = examples.forRoute(route);
      for (const [text, path] of poisoned(ex.body)) {
        const before = await stateDigest(rt.store.sql);
        const r = await inject(route, ex.params, ex.auth, {
          headers: { 'content-type': 'application/json' },
          payload: text,
        });
        const what = `${route.key} ${text.slice(-60)}`;
        expect(expectContractAnswer(r, what), `${what}: ${r.body}`).toBe('validation.invalid_field');
        const error = json(r).error;
        expect(error.details, what).toEqual([{ path, message: expect.stringContaining('is not accepted') }]);
        expect(error.message, what).toContain('__proto__');
        expect(await stateDigest(rt.store.sql), what).toEqual(before);
        expect(({} as Record<string, unknown>).polluted, what).toBeUndefined();
      }
    }
  });

  it('revoke and restore accept no body or {} only: anything else is 400 and changes nothing', async () => {
    const agent = (await ok('POST', '/v1/decisions', { agent_id: unique('bodies-agent'), action: 'bodies.read' }))
      .agent_id as string;
    const post = (what: 'revoke' | 'restore', payload: string) =>
      rt.app.inject({
        method: 'POST',
        url: `/v1/agents/${agent}/${what}`,
        headers: { authorization: bearer(), 'content-type': 'application/json' },
        payload,
      });
    for (const what of ['revoke', 'restore'] as const) {
      for (const payload of ['[]', '42', 'null', '"revoke"', 'true', '{"reason":"x"}', '{"status":"revoked"}']) {
        const before = await stateDigest(rt.store.sql);
        const r = await post(what, payload);
        expect(r.statusCode, `${what} ${payload}: ${r.body}`).toBe(400);
        expect(expectContractAnswer(r, `${what} ${payload}`)).toMatch(/^validation\./);
        expect(await stateDigest(rt.store.sql), `${what} ${payload}`).toEqual(before);
      }
      const r = await post(what, '{}');
      expect(r.statusCode, r.body).toBe(200);
      expect(json(r).status).toBe(what === 'revoke' ? 'revoked' : 'active');
    }
  });

  it('a field merely named like them is accepted where the route allows any field (decision context)', async () => {
    await pendingDecision();
    const r = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({
        agent_id: unique('bodies-agent'),
        action: 'bodies.read',
        context: { constructor: 'x', prototype: { a: 1 }, proto: 1 },
      }),
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r).effect).toBe('allow');
  });
});
