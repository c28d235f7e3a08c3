/** GET /healthz (the process is up) and GET /readyz (the store answers). No auth. */
import type { FastifyPluginAsync } from 'fastify';

export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => ({ status: 'ready', store: await app.services.health.ready() }));
};
