/** /v1/budgets: budget usage per (policy, agent) in the current period. */
import type { FastifyPluginAsync } from 'fastify';
import { listBody, listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { listBudgets } from '../limits/budget-list.js';

export const budgetRoutes: FastifyPluginAsync = async (app) => {
  const { store, clock, policySets } = app.services;
  app.get<{ Querystring: ListQuery }>('/v1/budgets', { config: { scope: 'budgets:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const page = await listBudgets({ sql: store.sql, clock, policySets }, request.principal, pageParams(request.query), request.query.agent_id);
    return listBody(page.data, page.has_more, '/v1/budgets');
  });
};
