/**
 * One HTTP attempt against the service: `fetch` under a time limit, the answer
 * read as JSON, every failure turned into an `AuthzError` (retry.ts decides
 * whether another attempt follows).
 */
import { AuthzError, CLIENT_ERROR_CODES, errorFromAnswer } from './errors.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpRequest {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/v1/decisions/dec_1/confirm`. */
  path: string;
  /** A JSON body (POST). */
  body?: unknown;
  idempotencyKey?: string;
  /** Limit of this attempt, in ms. */
  timeoutMs: number;
  /** The caller's signal: aborting it ends the attempt with `client.aborted`. */
  signal?: AbortSignal;
}

export interface HttpTarget {
  baseUrl: string;
  apiKey: string;
  fetch: FetchLike;
}

export interface HttpAnswer<T> {
  body: T;
  status: number;
  requestId: string | null;
}

/** True when the error shows the request never reached the service (connection refused), so nothing was applied. */
export function neverSent(error: AuthzError): boolean {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    if ((cause as { code?: unknown }).code === 'ECONNREFUSED') return true;
    cause = cause.cause;
  }
  return false;
}

function networkReason(error: unknown): string {
  const parts: string[] = [];
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    const code = (cause as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? `${cause.message} (${code})` : cause.message);
    cause = cause.cause;
  }
  return parts.join(': ') || String(error);
}

/**
 * Sends one request; resolves with the parsed 2xx answer, rejects with an `AuthzError`.
 *
 * @example
 * const answer = await sendOnce<Decision>({ baseUrl, apiKey, fetch }, { method: 'GET', path: '/v1/decisions/dec_1', timeoutMs: 5000 });
 */
export async function sendOnce<T>(target: HttpTarget, request: HttpRequest): Promise<HttpAnswer<T>> {
  if (request.signal?.aborted) throw abortedError(request.signal);
  const timer = new AbortController();
  const timeout = setTimeout(() => timer.abort(), request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timer.signal]) : timer.signal;
  const headers: Record<string, string> = { authorization: `Bearer ${target.apiKey}`, accept: 'application/json' };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
  try {
    let response: Response;
    let text: string;
    try {
      response = await target.fetch(`${target.baseUrl}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal,
      });
      text = await response.text();
    } catch (error) {
      if (request.signal?.aborted) throw abortedError(request.signal);
      if (timer.signal.aborted) {
        throw new AuthzError({
          code: CLIENT_ERROR_CODES.timeout,
          message: `${request.method} ${request.path}: no answer within ${request.timeoutMs} ms`,
          cause: error,
        });
      }
      throw new AuthzError({
        code: CLIENT_ERROR_CODES.networkError,
        message: `${request.method} ${request.path}: ${networkReason(error)}`,
        cause: error,
      });
    }
    if (response.status < 200 || response.status > 299) throw errorFromAnswer(response.status, response.headers, text);
    const requestId = response.headers.get('request-id');
    try {
      return { body: JSON.parse(text) as T, status: response.status, requestId };
    } catch (error) {
      throw new AuthzError({
        code: CLIENT_ERROR_CODES.unexpectedResponse,
        message: `${request.method} ${request.path}: HTTP ${response.status} with a body that is not JSON`,
        status: response.status,
        requestId,
        cause: error,
      });
    }
  } finally {
    clearTimeout(timeout);
  }
}

export function abortedError(signal: AbortSignal): AuthzError {
  return new AuthzError({
    code: CLIENT_ERROR_CODES.aborted,
    message: 'the call was aborted by its signal',
    cause: signal.reason,
  });
}
