/** /v1/sessions (extension: labels): a session's labels added (POST .../labels) and the session read (domain/session-labels.ts). */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/index.js';
import type { LabelsInput } from '../domain/session-labels.js';
import { sessionResource } from '../presenters/session.js';

// As long as a decision's session_id may be; no minLength: an empty id is the resource's 404 like any unknown one.
const params = {
  type: 'object',
  properties: { session_id: { type: 'string', maxLength: 256 } },
  required: ['session_id'],
} as const;

export const sessionRoutes: FastifyPluginAsync = async (app) => {
  const { sessions } = app.services;

  app.get<{ Params: { session_id: string } }>(
    '/v1/sessions/:session_id',
    { config: { scope: 'decisions:read' }, schema: { params } },
    async (request) => sessionResource(await sessions.get(request.principal, request.params.session_id)),
  );

  // A session is named by a decision's session_id: an empty one names none.
  const postParams = {
    ...params,
    properties: { session_id: { type: 'string', minLength: 1, maxLength: 256 } },
  } as const;
  app.post<{ Params: { session_id: string }; Body: LabelsInput }>(
    '/v1/sessions/:session_id/labels',
    { config: { scope: 'decisions:write' }, schema: { params: postParams, body: loadSchema('api/session-labels') } },
    async (request) => sessionResource(await sessions.add(request.principal, request.params.session_id, request.body)),
  );
};
