/**
 * Routes that take no fields (POST /v1/decisions/:id/permit, agent revoke and
 * restore): no body, an empty one, or `{}`; anything else (`[]`, `42`, `null`,
 * an unknown field) is 400 through the body schema.
 *
 * @example
 * app.post('/v1/agents/:agent_id/revoke', { schema: { body: emptyBody }, preValidation: noBodyIsEmpty }, handler);
 */
import type { FastifyRequest } from 'fastify';

/** The body schema: an object with no fields. */
export const emptyBody = { type: 'object', properties: {}, additionalProperties: false } as const;

/** No body (or an empty one sent as application/json, which the app's parser reads as none) means `{}`; a JSON `null` stays (400). */
export async function noBodyIsEmpty(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {};
}
