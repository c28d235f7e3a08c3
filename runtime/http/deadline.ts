/**
 * A deadline for routes that must fail closed in bounded time (POST
 * /v1/decisions): a route with `config: { deadline: true }` that has not answered
 * within the deadline gets 503 service.unavailable. A store call can hang rather
 * than fail (postgres.js leaves a query pending when a connection attempt is
 * refused at start-up), and a caller waiting forever on an authorization is as
 * bad as an error. Whatever the handler does later is not sent: the caller acts
 * on the 503 (a decision stored after it is like one whose process died: any hold
 * expires with its TTL).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ServiceUnavailableError } from '../errors/api-error.js';
import { sendError } from './error-handler.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer 503 service.unavailable if the route has not answered within the app's deadline. */
    deadline?: boolean;
  }
}

const timers = new WeakMap<FastifyReply, NodeJS.Timeout>();

export function registerDeadline(app: FastifyInstance, deadlineMs: number): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!request.routeOptions.config?.deadline) return;
    const timer = setTimeout(() => {
      if (reply.sent) return;
      request.log.warn({ deadlineMs }, 'request deadline passed: answering 503');
      sendError(reply, new ServiceUnavailableError(`the store did not answer within ${deadlineMs / 1000} s; nothing was decided, try again shortly`));
    }, deadlineMs);
    timer.unref();
    timers.set(reply, timer);
  });
  const clear = async (_request: unknown, reply: FastifyReply) => {
    clearTimeout(timers.get(reply));
    timers.delete(reply);
  };
  app.addHook('onResponse', clear);
}
