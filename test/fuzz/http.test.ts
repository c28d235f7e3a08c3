/**
 * HTTP fuzzing of every route the app registers (enumerated through onRoute, so
 * a new route is covered without touching this file), on both stores: mutated
 * valid bodies, raw bytes under any content type, odd query strings and path
 * parameters. Whatever comes in: never a 5xx; every error has the
 * body of docs/errors.md#error-codes with a code of docs/errors.md's table and the status it gives; and a
 * rejected request leaves the store exactly as it was.
 */
import type { InjectOptions } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ALERT_THRESHOLDS } from '../../runtime/alerts/security-alerts.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { expectContractAnswer } from './helpers/contract.js';
import { prepareExamples, type Example, type Examples } from './helpers/examples.js';
import { mutatedBody, pathParam, queryString, rawBody } from './helpers/mutations.js';
import { collectRoutes, fillPath, type RouteInfo } from './helpers/routes.js';
import { stateDigest } from './helpers/state-digest.js';

/** Requests per route and property: about 250 requests per property and store. */
const PER_ROUTE = { bodies: 9, raw: 4, urls: 5 };

/** Alerts would store a security.alert for a burst of refused tokens: a designed side effect of refusals, out of scope here. */
const QUIET_ALERTS = { ...DEFAULT_ALERT_THRESHOLDS, denyThreshold: 1e9, invalidTokenThreshold: 1e9, volumeMin: 1e9 };

const HAS_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

describe.each(STORE_KINDS)('HTTP fuzz (%s store)', (kind) => {
  let rt: TestRuntime;
  let routes: RouteInfo[];
  let examples: Examples;

  beforeAll(async () => {
    const collector = collectRoutes();
    rt = await startRuntime(kind, { app: { onRoute: collector.onRoute }, config: { alerts: QUIET_ALERTS } });
    // HEAD routes are Fastify's automatic twins of GET routes.
    routes = collector.routes.filter((r) => r.method !== 'HEAD');
    examples = await prepareExamples(rt);
  });
  afterAll(() => rt?.close());

  /** Sends one request and checks its answer (docs/errors.md#error-codes); a rejected request must not change the store. */
  async function send(route: RouteInfo, options: InjectOptions, what: string): Promise<number> {
    const before = await stateDigest(rt.store.sql);
    const r = await rt.app.inject(options);
    expectContractAnswer(r, `${route.key} ${what}`);
    if (r.statusCode >= 400)
      expect(await stateDigest(rt.store.sql), `${route.key} ${what} -> ${r.statusCode} changed the store`).toEqual(
        before,
      );
    return r.statusCode;
  }

  const url = (route: RouteInfo, ex: Example, params = ex.params, query = ex.query) =>
    `${fillPath(route, params)}${query ? `?${query}` : ''}`;

  it('finds the routes: every /v1 resource, the operator API, health and JWKS', () => {
    const keys = routes.map((r) => r.key);
    for (const k of [
      'POST /v1/decisions',
      'PUT /v1/bundle',
      'POST /v1/permits/verify',
      'POST /v1/webhooks/:id/deliveries/:delivery_id/replay',
      'POST /admin/accounts',
      'GET /readyz',
      'GET /.well-known/jwks.json',
    ]) {
      expect(keys).toContain(k);
    }
    expect(routes.filter((r) => r.url.startsWith('/v1/')).length).toBeGreaterThanOrEqual(25);
  });

  it('the seed requests themselves are accepted (so the mutations start from valid input)', async () => {
    for (const route of routes.filter((r) => r.method === 'GET' && r.url.startsWith('/v1/'))) {
      const ex = examples.forRoute(route);
      const r = await rt.app.inject({ method: 'GET', url: url(route, ex), headers: { authorization: ex.auth } });
      expect(r.statusCode, `${route.key}: ${r.body.slice(0, 200)}`).toBe(200);
    }
  });

  it('mutated JSON bodies on every route: no 5xx, documented errors, rejected requests change nothing', async () => {
    let accepted = 0;
    let rejected = 0;
    for (const route of routes) {
      const ex = examples.forRoute(route);
      await fc.assert(
        fc.asyncProperty(mutatedBody(ex.body ?? {}), fc.boolean(), async (body, withType) => {
          const headers: Record<string, string> = { authorization: ex.auth };
          if (body.text !== undefined || withType) headers['content-type'] = 'application/json';
          const status = await send(
            route,
            {
              method: route.method as never,
              url: url(route, ex),
              headers,
              ...(body.text !== undefined ? { payload: body.text } : {}),
            },
            body.describe,
          );
          if (status < 400) accepted++;
          else rejected++;
        }),
        { numRuns: PER_ROUTE.bodies },
      );
    }
    // Both sides were exercised (a fuzzer that only ever hits 400 tests little).
    expect(rejected).toBeGreaterThan(routes.length);
    expect(accepted).toBeGreaterThan(0);
  });

  it('raw bytes under any content type on every route that takes a body', async () => {
    for (const route of routes.filter((r) => HAS_BODY.has(r.method))) {
      const ex = examples.forRoute(route);
      await fc.assert(
        fc.asyncProperty(rawBody, async ({ bytes, contentType }) => {
          const headers: Record<string, string> = {
            authorization: ex.auth,
            ...(contentType !== undefined ? { 'content-type': contentType } : {}),
          };
          await send(
            route,
            { method: route.method as never, url: url(route, ex), headers, payload: bytes },
            `raw ${contentType ?? '(no type)'}: ${JSON.stringify(bytes.toString('latin1').slice(0, 80))}`,
          );
        }),
        { numRuns: PER_ROUTE.raw },
      );
    }
  });

  it('odd query strings and path parameters on every route', async () => {
    for (const route of routes) {
      const ex = examples.forRoute(route);
      const params = fc.record(
        Object.fromEntries(
          route.params.map((p) => [p, fc.oneof(pathParam, fc.constant(ex.params[p] ?? 'x'))]),
        ) as Record<string, fc.Arbitrary<string>>,
      );
      await fc.assert(
        fc.asyncProperty(params, fc.oneof(queryString, fc.constant(ex.query)), async (values, query) => {
          const headers: Record<string, string> = { authorization: ex.auth };
          const target = url(route, ex, values, query);
          const body = ex.body === undefined ? {} : { payload: ex.body as object };
          await send(
            route,
            { method: route.method as never, url: target, headers, ...(HAS_BODY.has(route.method) ? body : {}) },
            `url ${target.slice(0, 200)}`,
          );
        }),
        { numRuns: PER_ROUTE.urls },
      );
    }
  });

  it('a request body over the route limit: 413 validation.body_too_large naming that limit', async () => {
    const big = JSON.stringify({ agent_id: 'a', action: 'orders.read', context: { pad: 'x'.repeat(1024 * 1024) } });
    const route = routes.find((r) => r.key === 'POST /v1/decisions')!;
    await send(
      route,
      {
        method: 'POST',
        url: '/v1/decisions',
        headers: { authorization: `Bearer ${rt.testKey}`, 'content-type': 'application/json' },
        payload: big,
      },
      'over 1 MiB',
    );
    const r = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      headers: { 'content-type': 'application/json' },
      payload: big,
    });
    expect(r.statusCode).toBe(413);
    expect(r.json().error).toMatchObject({ code: 'validation.body_too_large' });
    expect(r.json().error.message).toContain('1 MiB');
  });
});
