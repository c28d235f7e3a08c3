/** /v1/webhooks: endpoints (create, list, read, change, delete), their deliveries, replay (domain/webhooks.ts). */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/index.js';
import type { WebhookCreateRequest, WebhookUpdateRequest } from '../../clients/typescript/wire.js';
import { listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { listBody } from '../presenters/list.js';
import {
  createdEndpointResource,
  deletedEndpointResource,
  deliveryResource,
  endpointResource,
} from '../presenters/webhook.js';
import { idParams } from '../http/params.js';

// No minLength: an empty id (what fetch or a browser sends for the id `.`, resolving dot segments) is the resource's 404 like any unknown id.
const deliveryParams = {
  type: 'object',
  properties: { id: { type: 'string', maxLength: 100 }, delivery_id: { type: 'string', maxLength: 100 } },
  required: ['id', 'delivery_id'],
} as const;

export const webhookRoutes: FastifyPluginAsync = async (app) => {
  const { webhooks } = app.services;
  const manage = { scope: 'webhooks:manage' as const };

  app.post<{ Body: WebhookCreateRequest }>(
    '/v1/webhooks',
    { config: manage, schema: { body: loadSchema('api/webhook-create') } },
    async (request, reply) => {
      const { row, secret } = await webhooks.create(request.principal, request.body);
      return reply.code(201).send(createdEndpointResource(row, secret));
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/v1/webhooks',
    { config: manage, schema: { querystring: listQuerySchema } },
    async (request) => {
      const page = await webhooks.list(request.principal, pageParams(request.query));
      return listBody(page.data.map(endpointResource), page.has_more, '/v1/webhooks');
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/webhooks/:id',
    { config: manage, schema: { params: idParams } },
    async (request) => endpointResource(await webhooks.get(request.principal, request.params.id)),
  );

  app.put<{ Params: { id: string }; Body: WebhookUpdateRequest }>(
    '/v1/webhooks/:id',
    { config: manage, schema: { params: idParams, body: loadSchema('api/webhook-update') } },
    async (request) => endpointResource(await webhooks.update(request.principal, request.params.id, request.body)),
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/webhooks/:id',
    { config: manage, schema: { params: idParams } },
    async (request) => {
      await webhooks.delete(request.principal, request.params.id);
      return deletedEndpointResource(request.params.id);
    },
  );

  app.get<{ Params: { id: string }; Querystring: ListQuery }>(
    '/v1/webhooks/:id/deliveries',
    { config: manage, schema: { params: idParams, querystring: listQuerySchema } },
    async (request) => {
      const { endpoint, page } = await webhooks.deliveries(
        request.principal,
        request.params.id,
        pageParams(request.query),
      );
      return listBody(page.data.map(deliveryResource), page.has_more, `/v1/webhooks/${endpoint.id}/deliveries`);
    },
  );

  app.post<{ Params: { id: string; delivery_id: string } }>(
    '/v1/webhooks/:id/deliveries/:delivery_id/replay',
    { config: manage, schema: { params: deliveryParams } },
    async (request) =>
      deliveryResource(await webhooks.replay(request.principal, request.params.id, request.params.delivery_id)),
  );
};
