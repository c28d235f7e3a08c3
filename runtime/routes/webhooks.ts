/** /v1/webhooks: endpoints (create, list, read, change, delete), their deliveries, replay. */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/schemas.js';
import { DeliveryNotFoundError } from '../errors/api-error.js';
import { listBody, listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { newId } from '../ids.js';
import { findDelivery, insertReplay, listDeliveries, listEndpoints, type DeliveryRow } from '../store/webhooks.js';
import { endpointResource, type EndpointInput } from '../domain/webhooks.js';

const idParams = { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 100 } }, required: ['id'] } as const;
const deliveryParams = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 100 }, delivery_id: { type: 'string', minLength: 1, maxLength: 100 } },
  required: ['id', 'delivery_id'],
} as const;

const iso = (v: Date | string | null): string | null => (v === null ? null : new Date(v).toISOString());

export function deliveryResource(d: DeliveryRow): Record<string, unknown> {
  const last = d.attempt_list[d.attempt_list.length - 1];
  return {
    id: d.id,
    object: 'webhook_delivery',
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempt: d.attempt_list.length,
    status_code: last?.status_code ?? null,
    error: last?.error ?? null,
    duration_ms: last?.duration_ms ?? null,
    next_attempt_at: iso(d.next_attempt_at),
    replay_of: d.replay_of,
    created_at: iso(d.created_at),
    attempts: d.attempt_list.map((a) => ({
      attempt: a.attempt,
      started_at: iso(a.started_at),
      status_code: a.status_code,
      error: a.error,
      duration_ms: a.duration_ms,
      next_attempt_at: iso(a.next_attempt_at),
    })),
  };
}

export const webhookRoutes: FastifyPluginAsync = async (app) => {
  const { store, clock, webhooks } = app.services;
  const sql = store.sql;
  const manage = { scope: 'webhooks:manage' as const };

  app.post<{ Body: EndpointInput & { url: string } }>('/v1/webhooks', { config: manage, schema: { body: loadSchema('api/webhook-create') } }, async (request, reply) => {
    const { row, secret } = await webhooks.create(request.principal, request.body);
    return reply.code(201).send({ ...endpointResource(row), secret });
  });

  app.get<{ Querystring: ListQuery }>('/v1/webhooks', { config: manage, schema: { querystring: listQuerySchema } }, async (request) => {
    const p = request.principal;
    const page = await listEndpoints(sql, p.accountId, p.environment, pageParams(request.query));
    return listBody(page.data.map(endpointResource), page.has_more, '/v1/webhooks');
  });

  app.get<{ Params: { id: string } }>('/v1/webhooks/:id', { config: manage, schema: { params: idParams } }, async (request) =>
    endpointResource(await webhooks.get(request.principal, request.params.id)),
  );

  app.put<{ Params: { id: string }; Body: EndpointInput }>(
    '/v1/webhooks/:id',
    { config: manage, schema: { params: idParams, body: loadSchema('api/webhook-update') } },
    async (request) => endpointResource(await webhooks.update(request.principal, request.params.id, request.body)),
  );

  app.delete<{ Params: { id: string } }>('/v1/webhooks/:id', { config: manage, schema: { params: idParams } }, async (request) => {
    await webhooks.delete(request.principal, request.params.id);
    return { id: request.params.id, object: 'webhook_endpoint', deleted: true };
  });

  app.get<{ Params: { id: string }; Querystring: ListQuery }>(
    '/v1/webhooks/:id/deliveries',
    { config: manage, schema: { params: idParams, querystring: listQuerySchema } },
    async (request) => {
      const p = request.principal;
      const endpoint = await webhooks.get(p, request.params.id);
      const page = await listDeliveries(sql, p.accountId, p.environment, endpoint.id, pageParams(request.query));
      return listBody(page.data.map(deliveryResource), page.has_more, `/v1/webhooks/${endpoint.id}/deliveries`);
    },
  );

  app.post<{ Params: { id: string; delivery_id: string } }>(
    '/v1/webhooks/:id/deliveries/:delivery_id/replay',
    { config: manage, schema: { params: deliveryParams } },
    async (request) => {
      const p = request.principal;
      const endpoint = await webhooks.get(p, request.params.id);
      const original = await findDelivery(sql, p.accountId, p.environment, endpoint.id, request.params.delivery_id);
      if (!original) throw new DeliveryNotFoundError(`no delivery ${request.params.delivery_id} of webhook endpoint ${endpoint.id}`);
      const id = newId('whd');
      await insertReplay(sql, { ...original, account_id: p.accountId, environment: p.environment }, id, new Date(clock.now()));
      return deliveryResource((await findDelivery(sql, p.accountId, p.environment, endpoint.id, id))!);
    },
  );
};
