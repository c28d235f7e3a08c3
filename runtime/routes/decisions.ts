/** /v1/decisions: decide (decideRoutes), read, list, confirm, reject (decisionRoutes). */
import type { FastifyPluginAsync } from 'fastify';
import { type Effect, loadSchema } from '../../compiler/index.js';
import { decisionResource } from '../presenters/decision.js';
import type { DecisionInput } from '../domain/decisions.js';
import { requestDeadline } from '../http/deadline.js';
import type { IdempotentAnswers } from '../http/idempotency.js';
import { pageParams, type ListQuery } from '../http/list.js';
import { listBody } from '../presenters/list.js';

/** The list parameters plus the filters (an unknown effect: 400 validation.invalid_field). */
const listQuerySchema = loadSchema('api/decision-list-query');

type DecisionListQuery = Omit<ListQuery, 'type'> & { effect?: Effect; reason?: string };

// No minLength: an empty id (what fetch or a browser sends for the id `.`, resolving dot segments) is the resource's 404 like any unknown id.
const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] } as const;

/** POST /v1/decisions: deciding. The key's platform limit is applied by the decision service, in the same store call as the policies' limits. */
export const decideRoutes: FastifyPluginAsync = async (app) => {
  const { decisions, clock, metrics, config, limits, permits } = app.services;
  // Fail closed in bounded time: 503 when the store hangs.
  const deadline = requestDeadline(config.decisionDeadlineMs);
  // A permit token is a bearer credential: the stored answer has none, and a
  // replay (which still counts against the key's platform limit) signs a fresh
  // token for the same decision.
  const answers: IdempotentAnswers = {
    toStore: (body) => JSON.stringify({ ...(JSON.parse(body) as object), permit_token: null }),
    async replay(request, stored) {
      await limits.admitKey(request.principal);
      const answer = JSON.parse(stored) as { id: string; permit_token: string | null };
      answer.permit_token = permits.issue(await decisions.get(request.principal, answer.id));
      return JSON.stringify(answer);
    },
  };

  app.post<{ Body: DecisionInput }>(
    '/v1/decisions',
    {
      config: { scope: 'decisions:write', idempotency: answers },
      schema: { body: loadSchema('api/decision-request') },
      onRequest: deadline.onRequest,
      onResponse: deadline.onResponse,
    },
    async (request) => {
      const started = performance.now();
      const row = await decisions.decide(request.principal, request.body);
      metrics.decided(row.effect, row.reason, (performance.now() - started) / 1000);
      return decisionResource(row, clock.now());
    },
  );
};

/** Reading, listing, confirming and rejecting decisions (admitted by the key's platform limit like other routes). */
export const decisionRoutes: FastifyPluginAsync = async (app) => {
  const { decisions, clock } = app.services;

  app.get<{ Querystring: DecisionListQuery }>('/v1/decisions', { config: { scope: 'decisions:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const { agent_id: agentId, effect, reason } = request.query;
    const page = await decisions.list(request.principal, pageParams(request.query), { agentId, effect, reason });
    const now = clock.now();
    return listBody(page.data.map((row) => decisionResource(row, now)), page.has_more, '/v1/decisions');
  });

  app.get<{ Params: { id: string } }>('/v1/decisions/:id', { config: { scope: 'decisions:read' }, schema: { params: idParams } }, async (request) =>
    decisionResource(await decisions.get(request.principal, request.params.id), clock.now()),
  );

  // confirm and reject take an optional body: none, or an empty one (runtime/http/json-body.ts), means {}.
  for (const [verb, to] of [['confirm', 'confirmed'], ['reject', 'rejected']] as const) {
    app.post<{ Params: { id: string }; Body: { amount?: number } | undefined }>(
      `/v1/decisions/:id/${verb}`,
      {
        config: { scope: 'decisions:write' },
        schema: { params: idParams, body: loadSchema('api/decision-resolve') },
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
};
