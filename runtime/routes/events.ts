/** /v1/events: the events of the environment, newest first (domain/events.ts). */
import type { FastifyPluginAsync } from 'fastify';
import { EVENT_TYPES } from '../events/build.js';
import { listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { envelope } from '../presenters/event.js';
import { listBody } from '../presenters/list.js';

/** The list parameters with `type` one of the event types (another: 400 validation.invalid_field, like every bad filter). */
const { $id: _id, ...listQuery } = listQuerySchema as { $id?: string; properties: Record<string, object> };
const eventListQuery = {
  ...listQuery,
  properties: { ...listQuery.properties, type: { enum: [...EVENT_TYPES], description: 'Only events of this type.' } },
};

export const eventRoutes: FastifyPluginAsync = async (app) => {
  const { events } = app.services;
  app.get<{ Querystring: ListQuery }>(
    '/v1/events',
    { config: { scope: 'events:read' }, schema: { querystring: eventListQuery } },
    async (request) => {
      const page = await events.list(request.principal, pageParams(request.query), request.query.type);
      return listBody(page.data.map(envelope), page.has_more, '/v1/events');
    },
  );
  app.get<{ Params: { id: string } }>('/v1/events/:id', { config: { scope: 'events:read' } }, async (request) =>
    envelope(await events.get(request.principal, request.params.id)),
  );
};
