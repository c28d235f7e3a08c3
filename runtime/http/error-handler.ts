/**
 * The one place errors become HTTP responses: typed ApiErrors with their code and
 * status; Fastify's own errors (bad JSON, body too large, schema validation) with
 * the codes of docs/errors.md; anything else a logged 500 that never leaks internals.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiError,
  BodyTooLargeError,
  InternalError,
  InvalidFieldError,
  InvalidJsonError,
  RouteNotFoundError,
  ServiceUnavailableError,
  UnsupportedMediaTypeError,
} from '../errors/api-error.js';
import { UnknownCursorError } from '../store/pagination.js';
import { isStoreUnavailable } from '../store/unavailable.js';
import { toApiError } from './validation.js';

export function errorBody(error: ApiError, requestId: string): object {
  return {
    error: {
      code: error.code,
      message: error.message,
      request_id: requestId,
      ...(error.details ? { details: error.details } : {}),
    },
  };
}

/** 1048576 -> '1 MiB', 65536 -> '64 KiB'. */
function byteSize(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function fromFastify(error: FastifyError, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (error.validation) return toApiError(error.validation as never, error.validationContext, request.body);
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new InvalidJsonError(
        error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
          ? 'the body is empty; send a JSON object'
          : `the body is not valid JSON: ${error.message}`,
      );
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BodyTooLargeError(
        `the body is larger than ${byteSize(request.routeOptions.bodyLimit ?? 1024 * 1024)}, this route's limit`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new UnsupportedMediaTypeError('send the body as application/json');
  }
  if (error instanceof UnknownCursorError) {
    const message = `query parameter starting_after: ${JSON.stringify(error.cursor)} is not an item of this list; pass the id of the last item of the previous page`;
    return new InvalidFieldError(message, { details: [{ path: '/starting_after', message }] });
  }
  if (error instanceof SyntaxError) return new InvalidJsonError(`the body is not valid JSON: ${error.message}`);
  // Fail closed: a store that cannot be reached answers 503 with Retry-After, never a 500 (nor a decision).
  // A connection lost during a commit leaves its outcome unknown: the message does not promise "nothing stored".
  if (isStoreUnavailable(error)) {
    return new ServiceUnavailableError(
      'the store is not reachable; try again shortly (a change whose answer was lost this way may have been stored: a retry then answers as for a repeat)',
    );
  }
  return new InternalError('internal error; quote the request id to support');
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  return reply.code(error.status).send(errorBody(error, String(reply.request.id)));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const api = fromFastify(error, request);
    if (api instanceof InternalError) request.log.error({ err: error }, 'unhandled error');
    else if (api instanceof ServiceUnavailableError) request.log.warn({ err: error }, 'service unavailable');
    return sendError(reply, api);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new RouteNotFoundError(`no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}
