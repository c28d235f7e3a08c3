/** /v1/agents: list, read, revoke (fires agent.revoked), restore. */
import type { FastifyPluginAsync } from 'fastify';
import type { Principal } from '../tenant.js';
import { AgentNotFoundError } from '../errors/api-error.js';
import { eventRow } from '../events/build.js';
import { listBody, listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { findAgent, listAgents, setAgentStatus, type AgentRow, type AgentStatus } from '../store/agents.js';
import { insertEvents } from '../store/events.js';

const params = { type: 'object', properties: { agent_id: { type: 'string', minLength: 1, maxLength: 256 } }, required: ['agent_id'] } as const;

export function agentResource(row: AgentRow, p: Principal): Record<string, unknown> {
  return {
    agent_id: row.agent_id,
    object: 'agent',
    status: row.status,
    first_seen_at: row.first_seen_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
    livemode: p.environment === 'live',
  };
}

export const agentRoutes: FastifyPluginAsync = async (app) => {
  const { store, clock, agents } = app.services;
  const sql = store.sql;

  app.get<{ Querystring: ListQuery }>('/v1/agents', { config: { scope: 'agents:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const p = request.principal;
    const page = await listAgents(sql, p.accountId, p.environment, pageParams(request.query));
    return listBody(page.data.map((row) => agentResource(row, p)), page.has_more, '/v1/agents');
  });

  app.get<{ Params: { agent_id: string } }>('/v1/agents/:agent_id', { config: { scope: 'agents:read' }, schema: { params } }, async (request) => {
    const p = request.principal;
    const row = await findAgent(sql, p.accountId, p.environment, request.params.agent_id);
    if (!row) throw new AgentNotFoundError(`no agent ${request.params.agent_id} has made a request in this environment`);
    return agentResource(row, p);
  });

  const transition = (to: AgentStatus) => async (request: { principal: Principal; params: { agent_id: string } }) => {
    const p = request.principal;
    const agentId = request.params.agent_id;
    const now = clock.now();
    const row = await sql.begin(async (tx) => {
      const changed = await setAgentStatus(tx, p.accountId, p.environment, agentId, to, new Date(now));
      if (!changed) {
        const existing = await findAgent(tx, p.accountId, p.environment, agentId);
        if (!existing) throw new AgentNotFoundError(`no agent ${agentId} has made a request in this environment`);
        return existing; // already in that state: no-op
      }
      if (to === 'revoked') await insertEvents(tx, [eventRow('agent.revoked', p.accountId, p.environment, now, { agent_id: agentId, agent: agentResource(changed, p) })]);
      await tx`select pg_notify('authz_agents', ${`${p.accountId}:${p.environment}:${to}:${agentId}`})`;
      return changed;
    });
    agents.set(p.accountId, p.environment, agentId, row.status);
    return agentResource(row, p);
  };

  app.post<{ Params: { agent_id: string } }>('/v1/agents/:agent_id/revoke', { config: { scope: 'agents:write' }, schema: { params } }, transition('revoked'));
  app.post<{ Params: { agent_id: string } }>('/v1/agents/:agent_id/restore', { config: { scope: 'agents:write' }, schema: { params } }, transition('active'));
};
