/**
 * GET / (issue 36): a browser (its Accept names text/html) is redirected to the
 * dashboard; any other client (curl's Accept: *\/*, a JSON client) gets a JSON
 * pointer to the API reference, the OpenAPI document and the dashboard, each of
 * which answers. No key needed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wantsHtml } from '../../runtime/routes/root.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('GET /', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime('embedded');
  });
  afterAll(() => rt?.close());

  it('a browser: 302 to /dashboard', async () => {
    const r = await rt.app.inject({ method: 'GET', url: '/', headers: { accept: BROWSER_ACCEPT } });
    expect(r.statusCode).toBe(302);
    expect(r.headers.location).toBe('/dashboard');
    expect(r.headers.vary).toMatch(/Accept/);
    expect((await rt.app.inject({ method: 'GET', url: '/dashboard' })).statusCode).toBe(200);
  });

  it('a client (curl, JSON): the API reference and where the rest is, each answering', async () => {
    for (const accept of [undefined, '*/*', 'application/json']) {
      const r = await rt.app.inject({ method: 'GET', url: '/', headers: accept ? { accept } : {} });
      expect(r.statusCode).toBe(200);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      const body = json(r);
      expect(body).toMatchObject({
        object: 'service',
        name: 'agent-authz',
        api_reference: '/docs',
        openapi: '/v1/openapi.json',
        dashboard: '/dashboard',
        health: '/healthz',
      });
      expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    }
    expect((await rt.app.inject({ method: 'GET', url: '/v1/openapi.json' })).statusCode).toBe(200);
    expect([200, 302]).toContain((await rt.app.inject({ method: 'GET', url: '/docs' })).statusCode);
    expect((await rt.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('reads Accept as browsers and clients send it', () => {
    expect(wantsHtml(BROWSER_ACCEPT)).toBe(true);
    expect(wantsHtml('TEXT/HTML')).toBe(true);
    expect(wantsHtml('text/html;q=0')).toBe(false);
    expect(wantsHtml('*/*')).toBe(false);
    expect(wantsHtml('application/json, text/plain')).toBe(false);
    expect(wantsHtml(undefined)).toBe(false);
  });
});
