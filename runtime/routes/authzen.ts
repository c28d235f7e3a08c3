/**
 * The AuthZEN Authorization API 1.0 (docs/api.md#authzen): POST /access/v1/evaluation,
 * POST /access/v1/evaluations, the search APIs POST /access/v1/search/subject
 * and /search/action, the access requests of routes/authzen-requests.ts
 * (registered here) (scope decisions:write; every evaluation is a
 * decision made by the decision service, which also applies the key's platform
 * limit, as for POST /v1/decisions) and the PDP metadata at GET
 * /.well-known/authzen-configuration (no auth). A request's X-Request-ID is
 * echoed in the answer, as AuthZEN asks. Idempotency-Key works as on POST
 * /v1/decisions: the stored answer has no permit tokens, a replay carries
 * freshly signed ones for the same decisions.
 *
 * Bodies: whatever the Content-Type (none, text/plain, a form), the body is
 * read as JSON, and anything but a JSON object is 400 validation.invalid_json
 * (never 415). Members AuthZEN does not define are ignored (domain/authzen.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/index.js';
import { PAGE_TOKEN_PURPOSE, searchActions, searchSubjects, type SearchDeps } from '../domain/authzen-search.js';
import { derivedKey } from '../secrets/derived-key.js';
import {
  evaluate,
  evaluateBatch,
  evaluationsSemantic,
  type AuthzenDeps,
  type AuthzenEvaluation,
  type AuthzenEvaluations,
} from '../domain/authzen.js';
import { InvalidJsonError } from '../errors/api-error.js';
import { requestDeadline } from '../http/deadline.js';
import { parseJsonBody } from '../http/json-body.js';
import type { IdempotentAnswers } from '../http/idempotency.js';
import {
  authzenAnswer,
  authzenAnswerToStore,
  authzenConfiguration,
  authzenFailure,
  replayableAuthzenAnswer,
} from '../presenters/authzen.js';
import { accessRequestRoutes } from './authzen-requests.js';

export const authzenRoutes: FastifyPluginAsync = async (app) => {
  const { decisions, metrics, config, store, policySets, accessRequests } = app.services;
  const search: SearchDeps = {
    sql: store.sql,
    policySets,
    decisions,
    pageTokenKey: derivedKey(config.masterKey, PAGE_TOKEN_PURPOSE),
  };
  // An approval at context.approval that applies answers with its approved decision (domain/access-requests.ts).
  const deps: AuthzenDeps = {
    decisions,
    approvals: accessRequests,
    decided: (row, seconds) => metrics.decided(row.effect, row.reason, seconds),
  };
  const answer = (row: Parameters<typeof authzenAnswer>[0]) => authzenAnswer(row, config.baseUrl);
  // Fail closed in bounded time, as POST /v1/decisions does.
  const deadline = requestDeadline(config.decisionDeadlineMs);
  // A permit token is a bearer credential: stored nowhere. A replay (which still
  // counts against the key's platform limit) signs fresh tokens for the same decisions.
  const idempotency: IdempotentAnswers = {
    toStore: authzenAnswerToStore,
    async replay(request, stored) {
      const replayed = replayableAuthzenAnswer(stored);
      return replayed.withPermits(await decisions.replayPermits(request.principal, replayed.permitIds));
    },
  };

  // Every media type is read as JSON here (the app's parser keeps application/json).
  if (app.hasContentTypeParser('text/plain')) app.removeContentTypeParser('text/plain');
  if (app.hasContentTypeParser('*')) app.removeContentTypeParser('*');
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  // No body, an empty one, or JSON that is not an object: the AuthZEN answer is 400 invalid_json.
  app.addHook('preValidation', async (request) => {
    const body: unknown = request.body;
    if (request.method === 'POST' && (body === null || typeof body !== 'object' || Array.isArray(body))) {
      throw new InvalidJsonError(
        `the body must be a JSON object, not ${body === undefined ? 'empty' : Array.isArray(body) ? 'an array' : JSON.stringify(body).slice(0, 40)}`,
      );
    }
  });

  app.addHook('onSend', async (request, reply) => {
    const id = request.headers['x-request-id'];
    if (typeof id === 'string' && id !== '') reply.header('x-request-id', id);
  });

  app.get('/.well-known/authzen-configuration', async () => authzenConfiguration(config.baseUrl));

  app.post<{ Body: AuthzenEvaluation }>(
    '/access/v1/evaluation',
    {
      config: { scope: 'decisions:write', idempotency },
      schema: { body: loadSchema('api/authzen-evaluation') },
      onRequest: deadline.onRequest,
      onResponse: deadline.onResponse,
    },
    async (request) => answer(await evaluate(deps, request.principal, request.body)),
  );

  // Search (AuthZEN 1.0): nothing stored, no limit used; each candidate decided as a preview.
  app.post<{ Body: Record<string, unknown> }>(
    '/access/v1/search/subject',
    { config: { scope: 'decisions:write' }, onRequest: deadline.onRequest, onResponse: deadline.onResponse },
    async (request) => searchSubjects(search, request.principal, request.body),
  );
  app.post<{ Body: Record<string, unknown> }>(
    '/access/v1/search/action',
    { config: { scope: 'decisions:write' }, onRequest: deadline.onRequest, onResponse: deadline.onResponse },
    async (request) => searchActions(search, request.principal, request.body),
  );

  // Access requests (the profile's submission and task status): the body reading and hooks above apply to them too.
  await app.register(accessRequestRoutes);

  app.post<{ Body: AuthzenEvaluations }>(
    '/access/v1/evaluations',
    {
      config: { scope: 'decisions:write', idempotency },
      schema: { body: loadSchema('api/authzen-evaluations') },
      onRequest: deadline.onRequest,
      onResponse: deadline.onResponse,
    },
    async (request) => {
      const { evaluations, options } = request.body;
      evaluationsSemantic(options);
      // Without an `evaluations` array, or with an empty one, the request is a single evaluation, answered as one.
      if (evaluations === undefined || evaluations.length === 0)
        return answer(await evaluate(deps, request.principal, request.body as AuthzenEvaluation));
      const outcomes = await evaluateBatch(deps, request.principal, { ...request.body, evaluations });
      return { evaluations: outcomes.map((o) => ('decision' in o ? answer(o.decision) : authzenFailure(o.error))) };
    },
  );
};
