/**
 * GET /metrics: the Prometheus text exposition of this process (budgets per
 * account and policy among it). Closed by default: only with
 * `Authorization: Bearer <AUTHZ_METRICS_TOKEN>` (401 auth.invalid_metrics_token
 * otherwise); with no AUTHZ_METRICS_TOKEN set it answers 404 route.not_found,
 * saying how to turn it on, as the operator API does when it is off.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { bearerToken } from '../auth/authenticate.js';
import { MetricsAuthError, RouteNotFoundError } from '../errors/api-error.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const metricsRoutes: FastifyPluginAsync = async (app) => {
  const { config, metrics } = app.services;
  const expected = config.metricsToken === undefined ? null : digest(config.metricsToken);
  app.get(
    '/metrics',
    {
      onRequest: async (request) => {
        if (expected === null)
          throw new RouteNotFoundError(
            'GET /metrics is off: set AUTHZ_METRICS_TOKEN (16+ characters) and scrape with Authorization: Bearer <AUTHZ_METRICS_TOKEN>',
          );
        const given = bearerToken(request);
        if (given === null || !timingSafeEqual(digest(given), expected))
          throw new MetricsAuthError('send the metrics token as Authorization: Bearer <AUTHZ_METRICS_TOKEN>');
      },
    },
    async (_request, reply) => {
      const { contentType, body } = await metrics.scrape();
      return reply.header('content-type', contentType).send(body);
    },
  );
};
