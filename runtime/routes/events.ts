/** /v1/events: the events of the environment, newest first. */
import type { FastifyPluginAsync } from 'fastify';
import { EventNotFoundError } from '../errors/api-error.js';
import { envelope } from '../events/build.js';
import { listBody, listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { findEvent, listEvents } from '../store/events.js';

export const eventRoutes: FastifyPluginAsync = async (app) => {
  const sql = app.services.store.sql;
  app.get<{ Querystring: ListQuery }>('/v1/events', { config: { scope: 'events:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const p = request.principal;
    const page = await listEvents(sql, p.accountId, p.environment, pageParams(request.query), request.query.type);
    return listBody(page.data.map(envelope), page.has_more, '/v1/events');
  });
  app.get<{ Params: { id: string } }>('/v1/events/:id', { config: { scope: 'events:read' } }, async (request) => {
    const p = request.principal;
    const row = await findEvent(sql, p.accountId, p.environment, request.params.id);
    if (!row) throw new EventNotFoundError(`no event ${request.params.id}`);
    return envelope(row);
  });
};
