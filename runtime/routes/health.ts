/** GET /healthz (the process is up) and GET /readyz (the store answers). No auth. */
import type { FastifyPluginAsync } from 'fastify';
import { ServiceUnavailableError } from '../errors/api-error.js';

export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => {
    try {
      await app.services.store.sql`select 1`;
    } catch {
      throw new ServiceUnavailableError('the store is not reachable');
    }
    return { status: 'ready', store: app.services.store.kind };
  });
};
