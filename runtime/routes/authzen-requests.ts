/**
 * Access requests (docs/api.md#access-requests-for-approvals; the AuthZEN Access
 * Request and Approval profile, draft): POST /access/v1/requests submits one
 * for a requestable denial (scope decisions:write, the key's own decisions;
 * 201 the task, a repeat 200 the same task), GET /access/v1/requests/:id is the
 * task's status endpoint (scope decisions:read or decisions:write, any key of
 * the decision's account and environment). Registered inside the AuthZEN
 * plugin (routes/authzen.ts), whose body reading (any media type as JSON, 400
 * validation.invalid_json for anything but an object) and X-Request-ID echo
 * it shares. Reviewers act on POST /v1/decisions/:id/review as for any review.
 */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/index.js';
import type { AccessRequestBody } from '../domain/access-requests.js';
import { idParams } from '../http/params.js';
import { accessTask } from '../presenters/authzen.js';

export const accessRequestRoutes: FastifyPluginAsync = async (app) => {
  const { accessRequests, config } = app.services;

  app.post<{ Body: AccessRequestBody }>(
    '/access/v1/requests',
    { config: { scope: 'decisions:write' }, schema: { body: loadSchema('api/authzen-access-request') } },
    async (request, reply) => {
      const { row, created } = await accessRequests.submit(request.principal, request.body);
      const task = accessTask(row, config.baseUrl);
      reply.header('location', task.task.status_endpoint);
      return reply.code(created ? 201 : 200).send(task);
    },
  );

  app.get<{ Params: { id: string } }>(
    '/access/v1/requests/:id',
    { config: { scope: ['decisions:read', 'decisions:write'] }, schema: { params: idParams } },
    async (request) => accessTask(await accessRequests.status(request.principal, request.params.id), config.baseUrl),
  );
};
