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
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ServiceUnavailableError } from '../errors/api-error.js';
import { sendError } from './error-handler.js';

type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

export interface DeadlineHooks {
  onRequest: Hook;
  onResponse: Hook;
}

/**
 * The hooks a route adds to answer 503 when it has not answered within `deadlineMs`
 * (at most a twentieth of it later, at most 100 ms: one timer sweeps every request
 * open on the route, instead of a timer per request).
 *
 * @example
 * const deadline = requestDeadline(2000);
 * app.post('/v1/decisions', { onRequest: deadline.onRequest, onResponse: deadline.onResponse }, handler);
 */
export function requestDeadline(deadlineMs: number): DeadlineHooks {
  // The open requests by arrival (a Map keeps insertion order): the oldest first.
  const open = new Map<FastifyReply, number>();
  const sweepMs = Math.max(5, Math.min(100, Math.floor(deadlineMs / 20)));
  let timer: NodeJS.Timeout | null = null;
  const sweep = () => {
    const now = performance.now();
    for (const [reply, startedAt] of open) {
      if (now - startedAt < deadlineMs) break;
      open.delete(reply);
      if (reply.sent) continue;
      reply.request.log.warn({ deadlineMs }, 'request deadline passed: answering 503');
      sendError(
        reply,
        new ServiceUnavailableError(
          `the store did not answer within ${deadlineMs / 1000} s; nothing was decided, try again shortly`,
        ),
      );
    }
    if (open.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };
  return {
    onRequest(_request, reply, done) {
      open.set(reply, performance.now());
      if (timer === null) {
        timer = setInterval(sweep, sweepMs);
        timer.unref();
      }
      done();
    },
    onResponse(_request, reply, done) {
      open.delete(reply);
      done();
    },
  };
}
