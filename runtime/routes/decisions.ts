/** /v1/decisions: decide (decideRoutes), read, list, confirm, reject, record a result's output (decisionRoutes). */
import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type {
  ActionsPossibleRequest,
  DecisionExportQuery,
  DecisionGetQuery,
  DecisionListQuery,
  DecisionResolveRequest,
} from '../../clients/typescript/wire.js';
import { InvalidFieldError } from '../errors/api-error.js';
import { loadSchema } from '../../compiler/index.js';
import {
  decisionAnswerToStore,
  decisionResource,
  previewResource,
  replayableDecisionAnswer,
} from '../presenters/decision.js';
import type { DecisionInput } from '../domain/decisions.js';
import type { DecisionOutputBody } from '../domain/decision-output.js';
import { requestDeadline } from '../http/deadline.js';
import type { IdempotentAnswers } from '../http/idempotency.js';
import { pageParams } from '../http/list.js';
import { dataList, listBody } from '../presenters/list.js';
import { idParams } from '../http/params.js';
import { queryTime } from '../http/query-time.js';
import { LongPolls } from '../http/long-polls.js';

/** The list parameters plus the filters (an unknown effect: 400 validation.invalid_field). */
const listQuerySchema = loadSchema('api/decision-list-query');

// No minLength: an empty id (what fetch or a browser sends for the id `.`, resolving dot segments) is the resource's 404 like any unknown id.

/** POST /v1/decisions: deciding. The key's platform limit is applied by the decision service, in the same store call as the policies' limits. */
export const decideRoutes: FastifyPluginAsync = async (app) => {
  const { decisions, clock, metrics, config } = app.services;
  // Fail closed in bounded time: 503 when the store hangs.
  const deadline = requestDeadline(config.decisionDeadlineMs);
  // A permit token is a bearer credential: the stored answer has none, and a
  // replay (which still counts against the key's platform limit) signs a fresh
  // token for the same decision.
  const answers: IdempotentAnswers = {
    toStore: decisionAnswerToStore,
    async replay(request, stored) {
      const replayed = replayableDecisionAnswer(stored);
      return replayed.withPermits(await decisions.replayPermits(request.principal, replayed.permitIds));
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
  const longPolls = new LongPolls();
  const { decisions, reviews, outputs, clock } = app.services;

  app.get<{ Querystring: DecisionListQuery }>(
    '/v1/decisions',
    { config: { scope: 'decisions:read' }, schema: { querystring: listQuerySchema } },
    async (request) => {
      const {
        agent_id: agentId,
        effect,
        reason,
        session_id: sessionId,
        on_behalf_of: onBehalfOf,
        shadow_diverged: shadowDiverged,
      } = request.query;
      const page = await decisions.list(request.principal, pageParams(request.query), {
        agentId,
        effect,
        reason,
        sessionId,
        onBehalfOf,
        shadowDiverged,
      });
      const now = clock.now();
      return listBody(
        page.data.map((row) => decisionResource(row, now)),
        page.has_more,
        '/v1/decisions',
      );
    },
  );

  // What a decision would be now: stores, holds, signs and fires nothing.
  app.post<{ Body: DecisionInput }>(
    '/v1/decisions/preview',
    { config: { scope: 'decisions:write' }, schema: { body: loadSchema('api/decision-request') } },
    async (request) => previewResource(await decisions.preview(request.principal, request.body)),
  );

  // Yes or no per action for this agent, never which policy.
  app.post<{ Body: ActionsPossibleRequest }>(
    '/v1/actions/possible',
    { config: { scope: 'decisions:write' }, schema: { body: loadSchema('api/actions-possible') } },
    async (request) =>
      dataList(await decisions.possible(request.principal, request.body.agent_id, request.body.actions)),
  );

  // NDJSON, oldest first, streamed a page at a time (constant memory however many).
  app.get<{ Querystring: DecisionExportQuery }>(
    '/v1/decisions/export',
    { config: { scope: 'decisions:read' }, schema: { querystring: loadSchema('api/decision-export-query') } },
    async (request, reply) => {
      const since = queryTime(request.query.since, 'since');
      const until = request.query.until === undefined ? new Date(clock.now()) : queryTime(request.query.until, 'until');
      if (since.getTime() > until.getTime())
        throw new InvalidFieldError('since must not be after until', {
          details: [{ path: 'query:since', message: 'must not be after until' }],
        });
      const rows = decisions.export(request.principal, { since, until });
      reply.type('application/x-ndjson; charset=utf-8');
      return reply.send(Readable.from(ndjson(rows, (row) => decisionResource(row, clock.now()))));
    },
  );

  // ?wait=SECONDS (extension): held while the decision awaits approval, answered as soon as its review changes.
  app.get<{ Params: { id: string }; Querystring: DecisionGetQuery }>(
    '/v1/decisions/:id',
    {
      config: { scope: 'decisions:read' },
      schema: { params: idParams, querystring: loadSchema('api/decision-get-query') },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { wait } = request.query;
      if (wait === undefined) return decisionResource(await decisions.get(request.principal, id), clock.now());
      // At most 100 long polls per API key at once (429 beyond).
      const release = longPolls.enter(request.principal.keyId);
      try {
        // The client gone: stop waiting.
        const left = new AbortController();
        reply.raw.once('close', () => left.abort());
        return decisionResource(await reviews.wait(request.principal, id, wait, left.signal), clock.now());
      } finally {
        release();
      }
    },
  );

  // What the MCP gateway read in the result of the request the decision allowed (extension): once, 409 after.
  app.post<{ Params: { id: string }; Body: DecisionOutputBody }>(
    '/v1/decisions/:id/output',
    { config: { scope: 'decisions:write' }, schema: { params: idParams, body: loadSchema('api/decision-output') } },
    async (request) =>
      decisionResource(await outputs.record(request.principal, request.params.id, request.body), clock.now()),
  );

  // confirm and reject take an optional body: none, or an empty one (runtime/http/json-body.ts), means {}.
  for (const [verb, to] of [
    ['confirm', 'confirmed'],
    ['reject', 'rejected'],
  ] as const) {
    app.post<{ Params: { id: string }; Body: DecisionResolveRequest | undefined }>(
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
        const amounts = to === 'confirmed' ? request.body?.amounts : undefined;
        return decisionResource(
          await decisions.resolve(request.principal, request.params.id, to, amount, amounts),
          clock.now(),
        );
      },
    );
  }
};

/** One JSON document per line, in chunks of about 64 KiB. */
async function* ndjson<T>(rows: AsyncIterable<T>, present: (row: T) => unknown): AsyncGenerator<string> {
  let chunk = '';
  for await (const row of rows) {
    chunk += `${JSON.stringify(present(row))}\n`;
    if (chunk.length >= 65_536) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}
