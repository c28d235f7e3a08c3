/**
 * The OpenAPI document (GET /v1/openapi.json) and the docs page (/docs): every
 * route Fastify registered is in the document (enumerated with an onRoute hook,
 * independently of @fastify/swagger) with its body, path and query schemas;
 * security per route; the page and its assets are served locally, without auth.
 */
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

/** Routes that serve the document, the docs page and the dashboard (pages, not operations of the API). */
const SELF = (url: string) =>
  url === '/v1/openapi.json' ||
  url === '/docs' ||
  url.startsWith('/docs/') ||
  url === '/dashboard' ||
  url.startsWith('/dashboard/');

const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('OpenAPI document', () => {
  let rt: TestRuntime;
  const routes: Array<{
    method: string;
    url: string;
    schema: JsonObject | undefined;
    scope: readonly string[] | undefined;
  }> = [];
  let doc: JsonObject;

  beforeAll(async () => {
    // Store kind is irrelevant to the document: the embedded store is enough.
    rt = await startRuntime('embedded', {
      app: {
        onRoute: (route: RouteOptions) => {
          for (const method of ([] as string[]).concat(route.method)) {
            routes.push({
              method,
              url: route.url,
              schema: route.schema as JsonObject | undefined,
              scope: route.config?.scope === undefined ? undefined : ([] as string[]).concat(route.config.scope),
            });
          }
        },
      },
    });
    const r = await rt.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    doc = json(r);
  });
  afterAll(() => rt.close());

  it('is OpenAPI 3.1 with paths, components and a bearer security scheme', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'agent-authz' });
    expect(typeof doc.info.version).toBe('string');
    expect(Object.keys(doc.paths).length).toBeGreaterThan(20);
    expect(doc.components.securitySchemes.apiKey).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    expect(doc.components.securitySchemes.adminToken).toEqual(
      expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    );
  });

  it('lists every registered route (HEAD twins and the document/page routes aside)', () => {
    const api = routes.filter((r) => r.method !== 'HEAD' && !SELF(r.url));
    // Sanity: the enumeration saw the routes of every plugin.
    for (const must of [
      'POST /v1/decisions',
      'PUT /v1/bundle',
      'POST /admin/accounts',
      'GET /.well-known/jwks.json',
      'GET /healthz',
    ]) {
      expect(api.map((r) => `${r.method} ${r.url}`)).toContain(must);
    }
    const missing = api
      .filter((r) => !doc.paths[openapiPath(r.url)]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.url}`);
    expect(missing).toEqual([]);
    // Nothing in the document that Fastify does not serve.
    const served = new Set(api.map((r) => `${r.method.toLowerCase()} ${openapiPath(r.url)}`));
    const extra = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item)
        .map((m) => `${m} ${path}`)
        .filter((k) => !served.has(k)),
    );
    expect(extra).toEqual([]);
  });

  it("carries each route's body, path and query schemas", () => {
    for (const r of routes.filter((x) => x.method !== 'HEAD' && !SELF(x.url))) {
      const op = doc.paths[openapiPath(r.url)][r.method.toLowerCase()];
      const params = (op.parameters ?? []) as Array<{ in: string; name: string; required?: boolean }>;
      for (const name of [...r.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1])) {
        expect(params, `${r.method} ${r.url} path parameter ${name}`).toContainEqual(
          expect.objectContaining({ in: 'path', name, required: true }),
        );
      }
      for (const name of Object.keys(r.schema?.querystring?.properties ?? {})) {
        expect(params, `${r.method} ${r.url} query ${name}`).toContainEqual(
          expect.objectContaining({ in: 'query', name }),
        );
      }
      if (r.schema?.body) {
        const body = op.requestBody?.content?.['application/json']?.schema;
        expect(body, `${r.method} ${r.url} body`).toBeDefined();
        expect(Object.keys(body.properties)).toEqual(Object.keys(r.schema.body.properties));
        expect(body.required ?? []).toEqual(r.schema.body.required ?? []);
      }
      expect(Object.keys(op.responses).length, `${r.method} ${r.url} responses`).toBeGreaterThanOrEqual(2);
    }
    const decide = doc.paths['/v1/decisions'].post;
    expect(decide.requestBody.content['application/json'].schema.properties.ttl_seconds).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 3600,
    });
    expect(decide.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Decision',
    });
    expect(decide.parameters).toContainEqual(expect.objectContaining({ in: 'header', name: 'Idempotency-Key' }));
    // Bodies checked in code are documented from the project's schemas.
    expect(doc.paths['/v1/policies'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/PolicyFile_policy',
    });
    expect(doc.components.schemas.PolicyFile_policy.properties.effect).toBeDefined();
    expect(doc.paths['/v1/bundle'].put.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Bundle',
    });
  });

  it('resolves every $ref inside the document', () => {
    const refs = new Set<string>();
    JSON.stringify(doc, (k, v) => {
      if (k === '$ref') refs.add(v as string);
      return v;
    });
    expect(refs.size).toBeGreaterThan(10);
    for (const r of refs) {
      expect(r, r).toMatch(/^#\/components\/schemas\/[A-Za-z0-9._-]+$/);
      expect(doc.components.schemas[r.split('/').pop()!], r).toBeDefined();
    }
  });

  it('states security per route: API key scope, operator token, or none', () => {
    for (const r of routes.filter((x) => x.method !== 'HEAD' && !SELF(x.url))) {
      const op = doc.paths[openapiPath(r.url)][r.method.toLowerCase()];
      if (r.scope) {
        expect(op.security, r.url).toEqual([{ apiKey: [] }]);
        // A route that takes any of several scopes names each.
        for (const scope of r.scope) expect(op.description).toContain(scope);
      } else if (r.url.startsWith('/admin/')) {
        expect(op.security, r.url).toEqual([{ adminToken: [] }]);
      } else if (r.url !== '/metrics') {
        expect(op.security, r.url).toEqual([]);
      }
    }
  });

  it('is served without auth, and so is the docs page with its own assets', async () => {
    const page = await rt.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBeLessThan(400);
    const index =
      page.statusCode === 200 ? page : await rt.app.inject({ method: 'GET', url: page.headers.location as string });
    expect(index.statusCode).toBe(200);
    expect(index.body).toContain('swagger-ui');
    // Every script and stylesheet the page loads is served here (no CDN).
    const assets = [...index.body.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      expect(asset).not.toMatch(/^https?:/);
      const url = new URL(asset, 'http://x/docs/').pathname;
      expect((await rt.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    }
    const viaPage = await rt.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json(viaPage).paths).toEqual(doc.paths);
  });
});
