/**
 * The operator dashboard: three static files (runtime/dashboard/public) read once
 * at start-up and served at /dashboard with no auth; the page signs in with an API
 * key kept in the tab's sessionStorage and calls the /v1 API with it. A strict
 * CSP (scripts, styles and fetches from this origin only; no inline code; no
 * framing) and no-referrer guard the page that holds the key. Not API operations:
 * hidden from the OpenAPI document.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { packageRoot } from '../../compiler/schemas.js';

export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
} as const;

type FileName = keyof typeof FILES;

export const dashboardRoutes: FastifyPluginAsync = async (app) => {
  const dir = join(packageRoot(), 'runtime', 'dashboard', 'public');
  const bodies = new Map<FileName, Buffer>((Object.keys(FILES) as FileName[]).map((name) => [name, readFileSync(join(dir, name))]));

  const send = (reply: FastifyReply, name: FileName) =>
    reply
      .header('content-type', FILES[name])
      .header('content-security-policy', DASHBOARD_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
      // Small files; a restart may bring a new version: revalidate every time.
      .header('cache-control', 'no-cache')
      .send(bodies.get(name));

  const page = { schema: { hide: true } };
  app.get('/dashboard', page, async (_request, reply) => send(reply, 'index.html'));
  app.get('/dashboard/', page, async (_request, reply) => send(reply, 'index.html'));
  app.get('/dashboard/app.js', page, async (_request, reply) => send(reply, 'app.js'));
  app.get('/dashboard/style.css', page, async (_request, reply) => send(reply, 'style.css'));
};
