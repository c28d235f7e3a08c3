/**
 * Human review (extension: docs/reviews.md#the-rules): the queue (GET /v1/reviews),
 * a verdict (POST /v1/decisions/:id/review), the permit of an approved decision
 * (POST /v1/decisions/:id/permit), and the dashboard's overview figures
 * (GET /v1/stats/decisions, GET /v1/stats/budgets). Waiting for a review is
 * GET /v1/decisions/:id?wait= (routes/decisions.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ReviewListQuery, StatsBudgetsQuery, StatsDecisionsQuery } from '../../clients/typescript/wire.js';
import { loadSchema } from '../../compiler/index.js';
import type { ReviewBody } from '../domain/reviews.js';
import type { IdempotentAnswers } from '../http/idempotency.js';
import { pageParams } from '../http/list.js';
import { decisionResource } from '../presenters/decision.js';
import { listBody } from '../presenters/list.js';
import { permitResource } from '../presenters/permit.js';
import { budgetStatsBody, decisionStatsBody } from '../presenters/stats.js';
import { idParams } from '../http/params.js';
import { emptyBody, noBodyIsEmpty } from '../http/empty-body.js';

export const reviewRoutes: FastifyPluginAsync = async (app) => {
  const { reviews, reviewWaiters, stats, clock } = app.services;

  // Closing: held long-polls answer now (each reads its decision once) instead of holding the shutdown.
  app.addHook('preClose', async () => {
    reviewWaiters.wakeAll();
  });

  app.get<{ Querystring: ReviewListQuery }>(
    '/v1/reviews',
    { config: { scope: 'reviews:read' }, schema: { querystring: loadSchema('api/review-list-query') } },
    async (request) => {
      const status = request.query.status ?? 'open';
      const page = await reviews.list(request.principal, status, pageParams(request.query));
      const now = clock.now();
      return listBody(
        page.data.map((row) => decisionResource(row, now)),
        page.has_more,
        '/v1/reviews',
      );
    },
  );

  app.post<{ Params: { id: string }; Body: ReviewBody }>(
    '/v1/decisions/:id/review',
    { config: { scope: 'reviews:write' }, schema: { params: idParams, body: loadSchema('api/review-request') } },
    async (request) =>
      decisionResource(await reviews.review(request.principal, request.params.id, request.body), clock.now()),
  );

  // A permit is a bearer credential: an Idempotency-Key's stored answer has none, and a replay signs a fresh one.
  const permitAnswers: IdempotentAnswers = {
    toStore: () => JSON.stringify(permitResource(null)),
    async replay(request) {
      const { id } = request.params as { id: string };
      return JSON.stringify(permitResource(await reviews.permit(request.principal, id)));
    },
  };
  // No body, or an empty one sent as application/json (the app's JSON parser reads it as none), means {}.
  app.post<{ Params: { id: string } }>(
    '/v1/decisions/:id/permit',
    {
      config: { scope: 'decisions:write', idempotency: permitAnswers },
      schema: { params: idParams, body: emptyBody },
      preValidation: noBodyIsEmpty,
    },
    async (request) => permitResource(await reviews.permit(request.principal, request.params.id)),
  );

  app.get<{ Querystring: StatsDecisionsQuery }>(
    '/v1/stats/decisions',
    { config: { scope: 'decisions:read' }, schema: { querystring: loadSchema('api/stats-decisions-query') } },
    async (request) =>
      decisionStatsBody(
        await stats.decisions(request.principal, request.query.minutes ?? 60, request.query.top ?? 5),
        request.principal.environment,
      ),
  );

  app.get<{ Querystring: StatsBudgetsQuery }>(
    '/v1/stats/budgets',
    { config: { scope: 'budgets:read' }, schema: { querystring: loadSchema('api/stats-budgets-query') } },
    async (request) =>
      budgetStatsBody(
        await stats.budgetsNearestLimit(request.principal, request.query.limit ?? 5),
        request.principal.environment,
      ),
  );
};
