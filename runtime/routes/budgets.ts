/**
 * /v1/budgets: budget usage per key (policy and agent, session or user) in the
 * current period, and what is left of the budgets that would apply to an agent,
 * session and user (domain/budgets.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { BudgetListQuery, BudgetRemainingQuery } from '../../clients/typescript/wire.js';
import { loadSchema } from '../../compiler/index.js';
import { pageParams } from '../http/list.js';
import { budgetResource, remainingBudgetsBody } from '../presenters/budget.js';
import { listBody } from '../presenters/list.js';

const budgetListQuery = loadSchema('api/budget-list-query');
const remainingQuery = loadSchema('api/budget-remaining-query');

export const budgetRoutes: FastifyPluginAsync = async (app) => {
  const { budgets } = app.services;
  app.get<{ Querystring: BudgetListQuery }>(
    '/v1/budgets',
    { config: { scope: 'budgets:read' }, schema: { querystring: budgetListQuery } },
    async (request) => {
      const { agent_id: agentId, session_id: sessionId, on_behalf_of: onBehalfOf } = request.query;
      const page = await budgets.list(request.principal, pageParams(request.query), { agentId, sessionId, onBehalfOf });
      return listBody(
        page.data.map((b) => budgetResource(b, request.principal.environment)),
        page.has_more,
        '/v1/budgets',
      );
    },
  );

  // Extension (docs/budgets-and-limits.md#spend-controls-for-agent-runs).
  app.get<{ Querystring: BudgetRemainingQuery }>(
    '/v1/budgets/remaining',
    { config: { scope: 'budgets:read' }, schema: { querystring: remainingQuery } },
    async (request) => {
      const { agent_id: agentId, session_id: sessionId, on_behalf_of: onBehalfOf } = request.query;
      const data = await budgets.remaining(request.principal, {
        agentId,
        sessionId: sessionId ?? null,
        onBehalfOf: onBehalfOf ?? null,
      });
      return remainingBudgetsBody(data);
    },
  );
};
