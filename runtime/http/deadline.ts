/**
 * A deadline for routes that must fail closed in bounded time (POST
 * /v1/decisions): the route adds the two hooks of `requestDeadline(ms)`, and
 * if it has not answered within `ms` it gets 503 service.unavailable. A store
 * call can hang rather than fail (postgres.js leaves a query pending when a
 * connection attempt is refused at start-up), and a caller waiting forever on
 * an authorization is as bad as an error. Whatever the handler does later is
 * not sent: the caller acts on the 503 (a decision stored after it is like one
 * whose process died: any hold expires with its TTL).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceUnavailableError } from '../errors/api-error.js';
import { sendError } from './error-handler.js';

export interface DeadlineHooks {
  onRequest: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  onResponse: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

/**
 * The hooks a route adds to answer 503 when it has not answered within `deadlineMs`.
 *
 * @example
 * const deadline = requestDeadline(2000);
 * app.post('/v1/decisions', { onRequest: deadline.onRequest, onResponse: deadline.onResponse }, handler);
 */
export function requestDeadline(deadlineMs: number): DeadlineHooks {
  const timers = new WeakMap<FastifyReply, NodeJS.Timeout>();
  return {
    async onRequest(request, reply) {
      const timer = setTimeout(() => {
        if (reply.sent) return;
        request.log.warn({ deadlineMs }, 'request deadline passed: answering 503');
        sendError(reply, new ServiceUnavailableError(`the store did not answer within ${deadlineMs / 1000} s; nothing was decided, try again shortly`));
      }, deadlineMs);
      timer.unref();
      timers.set(reply, timer);
    },
    async onResponse(_request, reply) {
      clearTimeout(timers.get(reply));
      timers.delete(reply);
    },
  };
}
