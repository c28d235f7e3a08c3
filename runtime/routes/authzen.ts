/**
 * The AuthZEN Authorization API 1.0 (contract: "AuthZEN (for gateways that
 * speak the standard)"): POST /access/v1/evaluation, POST /access/v1/evaluations
 * (scope decisions:write; every evaluation is a decision made by the decision
 * service, which also applies the key's platform limit, as for POST
 * /v1/decisions) and the PDP metadata at GET /.well-known/authzen-configuration
 * (no auth). A request's X-Request-ID is echoed in the answer, as AuthZEN asks.
 * Idempotency-Key works as on POST /v1/decisions: the stored answer has no
 * permit tokens, a replay carries freshly signed ones for the same decisions.
 */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/index.js';
import { evaluate, evaluateBatch, type AuthzenDeps, type AuthzenEvaluation, type AuthzenEvaluations } from '../domain/authzen.js';
import { requestDeadline } from '../http/deadline.js';
import type { IdempotentAnswers } from '../http/idempotency.js';
import { authzenAnswer, authzenConfiguration, authzenFailure, type AuthzenAnswer } from '../presenters/authzen.js';

export const authzenRoutes: FastifyPluginAsync = async (app) => {
  const { decisions, metrics, config, limits, permitIssuer: permits } = app.services;
  const deps: AuthzenDeps = { decisions, decided: (row, seconds) => metrics.decided(row.effect, row.reason, seconds) };
  // Fail closed in bounded time, as POST /v1/decisions does.
  const deadline = requestDeadline(config.decisionDeadlineMs);
  /** The answers of a body: the one evaluation, or each of a batch. */
  const answersOf = (body: { evaluations?: AuthzenAnswer[] } & Partial<AuthzenAnswer>): AuthzenAnswer[] => body.evaluations ?? [body as AuthzenAnswer];
  // A permit token is a bearer credential: stored nowhere. A replay (which still
  // counts against the key's platform limit) signs fresh tokens for the same decisions.
  const idempotency: IdempotentAnswers = {
    toStore(text) {
      const body = JSON.parse(text) as { evaluations?: AuthzenAnswer[] };
      for (const answer of answersOf(body)) if ('permit_token' in answer.context) delete answer.context.permit_token;
      return JSON.stringify(body);
    },
    async replay(request, stored) {
      await limits.admitKey(request.principal);
      const body = JSON.parse(stored) as { evaluations?: AuthzenAnswer[] };
      for (const answer of answersOf(body)) {
        if (!('id' in answer.context) || !answer.decision) continue;
        const token = permits.issue(await decisions.get(request.principal, answer.context.id));
        if (token) answer.context.permit_token = token;
      }
      return JSON.stringify(body);
    },
  };

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
    async (request) => authzenAnswer(await evaluate(deps, request.principal, request.body)),
  );

  app.post<{ Body: AuthzenEvaluations }>(
    '/access/v1/evaluations',
    {
      config: { scope: 'decisions:write', idempotency },
      schema: { body: loadSchema('api/authzen-evaluations') },
      onRequest: deadline.onRequest,
      onResponse: deadline.onResponse,
    },
    async (request) => {
      const { evaluations } = request.body;
      // Without an `evaluations` array the request is a single evaluation (AuthZEN's backwards-compatible form).
      if (evaluations === undefined) return authzenAnswer(await evaluate(deps, request.principal, request.body as AuthzenEvaluation));
      const outcomes = await evaluateBatch(deps, request.principal, { ...request.body, evaluations });
      return { evaluations: outcomes.map((o) => ('decision' in o ? authzenAnswer(o.decision) : authzenFailure(o.error))) };
    },
  );
};
