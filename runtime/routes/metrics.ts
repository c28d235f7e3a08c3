/**
 * GET /metrics: the Prometheus text exposition of this process. Open unless
 * AUTHZ_METRICS_TOKEN is set; then only with `Authorization: Bearer <that token>`
 * (401 auth.invalid_metrics_token otherwise).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { bearerToken } from '../auth/authenticate.js';
import { MetricsAuthError } from '../errors/api-error.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const metricsRoutes: FastifyPluginAsync = async (app) => {
  const { config, metrics } = app.services;
  const expected = config.metricsToken === undefined ? null : digest(config.metricsToken);
  app.get(
    '/metrics',
    {
      onRequest: async (request) => {
        if (expected === null) return;
        const given = bearerToken(request);
        if (given === null || !timingSafeEqual(digest(given), expected)) throw new MetricsAuthError('send the metrics token as Authorization: Bearer <AUTHZ_METRICS_TOKEN>');
      },
    },
    async (_request, reply) => {
      const { contentType, body } = await metrics.scrape();
      return reply.header('content-type', contentType).send(body);
    },
  );
};
