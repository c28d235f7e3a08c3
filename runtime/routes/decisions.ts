/** /v1/decisions: decide, read, list, confirm, reject. */
import type { FastifyPluginAsync } from 'fastify';
import type { Effect } from '../../compiler/policy/types.js';
import { loadSchema } from '../../compiler/schemas.js';
import { decisionResource } from '../presenters/decision.js';
import type { DecisionInput } from '../domain/decisions.js';
import { pageParams, type ListQuery } from '../http/list.js';
import { listBody } from '../presenters/list.js';

/** The list parameters plus the filters (an unknown effect: 400 validation.invalid_field). */
const listQuerySchema = loadSchema('api/decision-list-query');

type DecisionListQuery = Omit<ListQuery, 'type'> & { effect?: Effect; reason?: string };

const idParams = { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 100 } }, required: ['id'] } as const;

export const decisionRoutes: FastifyPluginAsync = async (app) => {
  const { decisions, clock, metrics } = app.services;

  app.post<{ Body: DecisionInput }>(
    '/v1/decisions',
    { config: { scope: 'decisions:write', admitsItself: true, deadline: true }, schema: { body: loadSchema('api/decision-request') } },
    async (request) => {
      const started = performance.now();
      const row = await decisions.decide(request.principal, request.body);
      metrics.decided(row.effect, row.reason, (performance.now() - started) / 1000);
      return decisionResource(row, clock.now());
    },
  );

  app.get<{ Querystring: DecisionListQuery }>('/v1/decisions', { config: { scope: 'decisions:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const { agent_id: agentId, effect, reason } = request.query;
    const page = await decisions.list(request.principal, pageParams(request.query), { agentId, effect, reason });
    const now = clock.now();
    return listBody(page.data.map((row) => decisionResource(row, now)), page.has_more, '/v1/decisions');
  });

  app.get<{ Params: { id: string } }>('/v1/decisions/:id', { config: { scope: 'decisions:read' }, schema: { params: idParams } }, async (request) =>
    decisionResource(await decisions.get(request.principal, request.params.id), clock.now()),
  );

  // confirm and reject take an optional body: none, or an empty one sent as
  // application/json (as many clients do), means {}.
  await app.register(async (resolving) => {
    const parseJson = resolving.getDefaultJsonParser('error', 'error');
    resolving.removeContentTypeParser('application/json');
    resolving.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = body as string;
      if (text.trim() === '') return done(null, undefined);
      parseJson(request, text, done);
    });
    for (const [verb, to] of [['confirm', 'confirmed'], ['reject', 'rejected']] as const) {
      resolving.post<{ Params: { id: string }; Body: { amount?: number } | undefined }>(
        `/v1/decisions/:id/${verb}`,
        {
          config: { scope: 'decisions:write' },
          schema: { params: idParams, body: loadSchema('api/decision-resolve') },
          // The body is optional here: no body means {}.
          preValidation: async (request) => {
            request.body ??= {};
          },
        },
        async (request) => {
          const amount = to === 'confirmed' ? request.body?.amount : undefined;
          return decisionResource(await decisions.resolve(request.principal, request.params.id, to, amount), clock.now());
        },
      );
    }
  });
};
