/** /v1/budgets: budget usage per (policy, agent) in the current period (domain/budgets.ts). */
import type { FastifyPluginAsync } from 'fastify';
import { listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { listBody } from '../presenters/list.js';

export const budgetRoutes: FastifyPluginAsync = async (app) => {
  const { budgets } = app.services;
  app.get<{ Querystring: ListQuery }>('/v1/budgets', { config: { scope: 'budgets:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const page = await budgets.list(request.principal, pageParams(request.query), request.query.agent_id);
    return listBody(page.data, page.has_more, '/v1/budgets');
  });
};
