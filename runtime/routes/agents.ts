/** /v1/agents: list, read, set attributes (extension), revoke (fires agent.revoked), restore (domain/agents.ts); revoke and restore take no body or `{}`. */
import type { FastifyPluginAsync } from 'fastify';
import type { AgentUpdateRequest } from '../../clients/typescript/wire.js';
import { loadSchema } from '../../compiler/index.js';
import { emptyBody, noBodyIsEmpty } from '../http/empty-body.js';
import { listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { agentResource } from '../presenters/agent.js';
import { listBody } from '../presenters/list.js';

// No minLength: an empty id (what fetch or a browser sends for the id `.`, resolving dot segments) is the resource's 404 like any unknown id.
const params = {
  type: 'object',
  properties: { agent_id: { type: 'string', maxLength: 256 } },
  required: ['agent_id'],
} as const;

export const agentRoutes: FastifyPluginAsync = async (app) => {
  const { agents: agentService } = app.services;

  app.get<{ Querystring: ListQuery }>(
    '/v1/agents',
    { config: { scope: 'agents:read' }, schema: { querystring: listQuerySchema } },
    async (request) => {
      const p = request.principal;
      const page = await agentService.list(p, pageParams(request.query));
      return listBody(
        page.data.map((row) => agentResource(row, p.environment)),
        page.has_more,
        '/v1/agents',
      );
    },
  );

  app.get<{ Params: { agent_id: string } }>(
    '/v1/agents/:agent_id',
    { config: { scope: 'agents:read' }, schema: { params } },
    async (request) =>
      agentResource(await agentService.get(request.principal, request.params.agent_id), request.principal.environment),
  );

  // An empty id cannot be given attributes (it is no agent a decision could name).
  const putParams = { ...params, properties: { agent_id: { type: 'string', minLength: 1, maxLength: 256 } } } as const;
  app.put<{ Params: { agent_id: string }; Body: AgentUpdateRequest }>(
    '/v1/agents/:agent_id',
    { config: { scope: 'agents:write' }, schema: { params: putParams, body: loadSchema('api/agent-update') } },
    async (request) =>
      agentResource(
        await agentService.setAttributes(request.principal, request.params.agent_id, request.body.attributes),
        request.principal.environment,
      ),
  );

  app.post<{ Params: { agent_id: string } }>(
    '/v1/agents/:agent_id/revoke',
    { config: { scope: 'agents:write' }, schema: { params, body: emptyBody }, preValidation: noBodyIsEmpty },
    async (request) =>
      agentResource(
        await agentService.revoke(request.principal, request.params.agent_id),
        request.principal.environment,
      ),
  );

  app.post<{ Params: { agent_id: string } }>(
    '/v1/agents/:agent_id/restore',
    { config: { scope: 'agents:write' }, schema: { params, body: emptyBody }, preValidation: noBodyIsEmpty },
    async (request) =>
      agentResource(
        await agentService.restore(request.principal, request.params.agent_id),
        request.principal.environment,
      ),
  );
};
