/**
 * The HTTP application: a Fastify instance with request ids, JSON validation, the
 * one error mapping, API key authentication, and one route plugin per resource,
 * registered explicitly.
 */
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import { registerAuthentication, registerKeyAdmission } from './auth/authenticate.js';
import { InvalidFieldError } from './errors/api-error.js';
import { closeIncompleteRequests, connectionCap, fdSoftLimit, timeoutOptions } from './http/connection-limits.js';
import { registerErrorHandling, sendError } from './http/error-handler.js';
import { registerIdempotency } from './http/idempotency.js';
import { registerJsonBodies } from './http/json-body.js';
import { lazyChildLogger } from './http/lazy-logger.js';
import { refuseOtherMediaTypes } from './http/media-type.js';
import { rejectUnstorableInput, validatorCompiler } from './http/validation.js';
import { newId } from './ids.js';
import type { RequestSummary } from './http/request-summary.js';
import { adminRoutes } from './routes/admin.js';
import { agentRoutes } from './routes/agents.js';
import { sessionRoutes } from './routes/sessions.js';
import { authzenRoutes } from './routes/authzen.js';
import { budgetRoutes } from './routes/budgets.js';
import { bundleRoutes } from './routes/bundle.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { decideRoutes, decisionRoutes } from './routes/decisions.js';
import { eventRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { registerOpenApi } from './routes/openapi.js';
import { permitRoutes } from './routes/permits.js';
import { policyRoutes } from './routes/policies.js';
import { reviewRoutes } from './routes/reviews.js';
import { rootRoutes } from './routes/root.js';
import { webhookRoutes } from './routes/webhooks.js';
import { systemClock } from './clock.js';
import type { Services } from './services.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
}

export const BODY_LIMIT = 1024 * 1024;

export interface AppOptions {
  logger?: boolean | object;
  /** Told of every route as it is registered (tests enumerate the routes with it). */
  onRoute?: (route: RouteOptions) => void;
  /** A dispatcher process (AUTHZ_ROLE=dispatcher) answers only GET /healthz and /readyz. */
  healthOnly?: boolean;
  /** Counts every answered request (the quiet default log's summary: http/request-summary.ts). */
  requestSummary?: RequestSummary;
}

export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const { maxConnections, requestTimeoutMs } = services.config;
  const app = Fastify({
    // Connections without a complete request within the timeout are closed (http/connection-limits.ts).
    ...timeoutOptions(requestTimeoutMs),
    logger: options.logger ?? false,
    // A request's child logger is made on its first line (at the quiet default, almost never).
    ...(options.logger ? { childLoggerFactory: lazyChildLogger } : {}),
    bodyLimit: BODY_LIMIT,
    genReqId: () => newId('req', services.clock.now()),
    requestIdHeader: false,
    return503OnClosing: true,
    // An agent id may have 256 characters, percent-encoded in /v1/agents/:agent_id up to 12 each.
    routerOptions: { maxParamLength: 4096 },
    // Errors the router raises before any hook runs (bad percent-encoding, over-long
    // parameter): still the error body of docs/errors.md and request-id header.
    frameworkErrors: (error, request, reply) => {
      reply.header('request-id', request.id);
      const message =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'a path parameter is too long'
          : 'the URL is not valid: check its percent-encoding';
      sendError(reply, new InvalidFieldError(message));
    },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  });
  app.server.maxConnections = connectionCap(maxConnections, fdSoftLimit());
  closeIncompleteRequests(app.server, requestTimeoutMs);
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  app.setValidatorCompiler(validatorCompiler);
  app.decorate('services', services);
  // AUTHZ_OTEL: a span per request, first, so every later hook and the handler run in it.
  if (services.tracing.enabled) (await import('./telemetry/otel.js')).registerRequestSpans(app, services.tracing);
  // Callback hooks on every request: no promise each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('request-id', request.id);
    done();
  });
  const summary = options.requestSummary;
  if (summary) {
    app.addHook('onResponse', (_request, reply, done) => {
      summary.record(reply.statusCode, reply.elapsedTime);
      done();
    });
  }
  // With a clock other than the system's (the test clock), Date says the service's time
  // (authz replay reads its window's end from it). With the system clock Node's own Date is that.
  const { clock } = services;
  if (clock !== systemClock) {
    app.addHook('onSend', async (_request, reply) => {
      reply.header('date', new Date(clock.now()).toUTCString());
    });
  }
  registerErrorHandling(app);
  if (options.healthOnly) {
    await app.register(healthRoutes);
    return app;
  }
  // JSON bodies: an empty one is no body; __proto__ fields are refused with their path.
  registerJsonBodies(app);
  refuseOtherMediaTypes(app, 'application/json');
  app.addHook('preValidation', rejectUnstorableInput);
  registerAuthentication(app, services.apiKeys);
  // Idempotency-Key on POST routes under /v1 (hooks added as they are registered).
  registerIdempotency(app, { sql: services.store.sql, clock: services.clock, masterKey: services.config.masterKey });
  // First: the OpenAPI document collects every route registered after it.
  await registerOpenApi(app);
  await app.register(healthRoutes);
  await app.register(rootRoutes);
  // Decisions apply the key's platform limit themselves (in the store call of the policies' limits).
  await app.register(decideRoutes);
  // AuthZEN evaluations are decisions too: the decision service applies the key's platform limit.
  await app.register(authzenRoutes);
  // Every other authenticated route is admitted by the key's platform limit first.
  await app.register(async (admitted) => {
    registerKeyAdmission(admitted, (principal) => services.limits.admitKey(principal));
    await admitted.register(decisionRoutes);
    await admitted.register(reviewRoutes);
    await admitted.register(policyRoutes);
    await admitted.register(bundleRoutes);
    await admitted.register(agentRoutes);
    await admitted.register(sessionRoutes);
    await admitted.register(budgetRoutes);
    await admitted.register(eventRoutes);
    await admitted.register(webhookRoutes);
    await admitted.register(permitRoutes);
    await admitted.register(adminRoutes);
    await admitted.register(metricsRoutes);
    await admitted.register(dashboardRoutes);
  });
  return app;
}
