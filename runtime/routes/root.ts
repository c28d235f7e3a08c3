/**
 * GET /: where to go from the service's address. A browser (Accept naming
 * text/html) is sent to the dashboard (302 to /dashboard); any other client gets
 * a JSON pointer to the API reference (/docs), the OpenAPI document, the
 * dashboard and the health route. No auth.
 */
import type { FastifyPluginAsync } from 'fastify';
import { compilerVersion } from '../../compiler/index.js';
import { serviceResource } from '../presenters/service.js';

/** Whether an Accept header asks for HTML with a q above 0 (what browsers send for a page). */
export function wantsHtml(accept: string | string[] | undefined): boolean {
  if (accept === undefined) return false;
  for (const part of (Array.isArray(accept) ? accept.join(',') : accept).split(',')) {
    const [range, ...params] = part.split(';');
    if (range!.trim().toLowerCase() !== 'text/html') continue;
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

export const rootRoutes: FastifyPluginAsync = async (app) => {
  const version = compilerVersion().replace(/^agent-authz /, '');
  app.get('/', async (request, reply) => {
    reply.header('vary', 'Accept');
    if (wantsHtml(request.headers.accept)) return reply.redirect('/dashboard', 302);
    return serviceResource(version);
  });
};
