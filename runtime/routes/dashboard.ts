/**
 * The operator dashboard: the static files of runtime/dashboard/public (a page, a
 * style sheet and the ES modules it imports: app.js, its helpers and views/*.js),
 * read once at start-up and served at /dashboard/<path> with no auth; the page
 * itself is also /dashboard and /dashboard/. The page signs in with an API key kept
 * in the tab's sessionStorage and calls the /v1 API with it. A strict CSP (scripts,
 * styles and fetches from this origin only; no inline code; no framing) and
 * no-referrer guard the page that holds the key. Not API operations: hidden from the
 * OpenAPI document.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { packageRoot } from '../../compiler/index.js';

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

/** Served file kinds; a file of any other kind in the directory is not served. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** A file to serve: its content type and bytes. */
interface Asset {
  type: string;
  body: Buffer;
}

/**
 * The servable files under `dir`, keyed by their path relative to it with `/`
 * separators. Example: `dashboardAssets(dir).get('views/agents.js')?.type` is
 * `text/javascript; charset=utf-8`.
 */
export function dashboardAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const type = CONTENT_TYPES[extname(entry.name)];
    if (!type) continue;
    const file = join(entry.parentPath, entry.name);
    assets.set(relative(dir, file).split(sep).join('/'), { type, body: readFileSync(file) });
  }
  return assets;
}

export const dashboardRoutes: FastifyPluginAsync = async (app) => {
  const assets = dashboardAssets(join(packageRoot(), 'runtime', 'dashboard', 'public'));
  const index = assets.get('index.html');
  if (!index) throw new Error('runtime/dashboard/public/index.html is missing');

  const send = (reply: FastifyReply, asset: Asset) =>
    reply
      .header('content-type', asset.type)
      .header('content-security-policy', DASHBOARD_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
      // Small files; a restart may bring a new version: revalidate every time.
      .header('cache-control', 'no-cache')
      .send(asset.body);

  const page = { schema: { hide: true } };
  app.get('/dashboard', page, async (_request, reply) => send(reply, index));
  app.get('/dashboard/', page, async (_request, reply) => send(reply, index));
  // One route per file (no wildcard): nothing but these files is reachable.
  for (const [path, asset] of assets) {
    if (path === 'index.html') continue;
    app.get(`/dashboard/${path}`, page, async (_request, reply) => send(reply, asset));
  }
};
