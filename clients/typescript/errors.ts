/**
 * Errors of the client, as typed values. Every error answer of the service
 * becomes an `AuthzError` carrying the service's code (docs/errors.md#error-codes); a call
 * that got no usable answer carries one of the client's own codes (`client.*`).
 * A deny is not an error of `decide`; `guard` throws `DecisionDeniedError` for it.
 */
import type { Decision } from './types.js';

/** Codes of failures the client reports itself (no error body from the service). */
export const CLIENT_ERROR_CODES = {
  /** No answer after the retries: connection refused or dropped, DNS failure, ... */
  networkError: 'client.network_error',
  /** Every attempt ran past its time limit (`timeoutMs`). */
  timeout: 'client.timeout',
  /** The caller's `signal` aborted the call. */
  aborted: 'client.aborted',
  /** An answer that is not the service's JSON (e.g. a proxy's HTML error page, a body that is not JSON). */
  unexpectedResponse: 'client.unexpected_response',
} as const;

export interface ErrorDetail {
  path: string;
  message: string;
  line?: number;
  column?: number;
}

export interface AuthzErrorInit {
  code: string;
  message: string;
  /** HTTP status; `null` when no HTTP answer arrived. */
  status?: number | null;
  requestId?: string | null;
  /** Seconds from the `Retry-After` header (429). */
  retryAfter?: number | null;
  details?: ErrorDetail[];
  cause?: unknown;
}

/**
 * An error answer of the service, or a call that got none.
 *
 * @example
 * try {
 *   await authz.decide({ agent_id: 'bot-1', action: 'Bad Action' });
 * } catch (err) {
 *   if (err instanceof AuthzError) console.log(err.code, err.status, err.requestId); // validation.invalid_action 400 req_...
 * }
 */
export class AuthzError extends Error {
  /** The service's code (`validation.invalid_action`, `rate_limit.exceeded`, ...) or a `client.*` code. */
  readonly code: string;
  /** HTTP status of the answer; `null` when there was none (network failure, timeout, abort). */
  readonly status: number | null;
  /** The `Request-Id` of the answer (`req_...`), to quote to support; `null` without one. */
  readonly requestId: string | null;
  /** Seconds the service asked to wait (`Retry-After`), else `null`. */
  readonly retryAfter: number | null;
  /** Per-field problems of a 400, when the service lists them. */
  readonly details: ErrorDetail[];
  /**
   * `guard` only: the work's answer, when the work succeeded but the decision
   * could not be confirmed. `undefined` otherwise.
   */
  result?: unknown;

  constructor(init: AuthzErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status ?? null;
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.details = init.details ?? [];
  }
}

/**
 * Thrown by `guard` when the decision is a deny; the work never ran. Its
 * `code` is the deny's reason (`policy.not_found`, `budget.exceeded`, ...).
 *
 * @example
 * try {
 *   await authz.guard({ agent_id: 'bot-1', action: 'payments.charge', amount: 20 }, () => charge());
 * } catch (err) {
 *   if (err instanceof DecisionDeniedError) console.log(err.decision.id, err.decision.reason);
 * }
 */
export class DecisionDeniedError extends AuthzError {
  /** The deny decision (stored by the service: `GET /v1/decisions/:id` finds it). */
  readonly decision: Decision;

  constructor(decision: Decision, requestId: string | null) {
    super({
      code: decision.reason,
      message: `${decision.action} denied for ${decision.agent_id}: ${decision.reason} (${decision.id})`,
      status: 200,
      requestId,
    });
    this.decision = decision;
  }
}

/** Seconds of a `Retry-After` header (whole seconds or an HTTP date); `null` when absent or unreadable. */
export function parseRetryAfter(header: string | null, nowMs: number = Date.now()): number | null {
  if (header === null || header.trim() === '') return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** The `AuthzError` of a non-2xx answer: the service's error body, or `client.unexpected_response`. */
export function errorFromAnswer(status: number, headers: Headers, text: string): AuthzError {
  const requestId = headers.get('request-id');
  const retryAfter = parseRetryAfter(headers.get('retry-after'));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (
    body as { error?: { code?: unknown; message?: unknown; request_id?: unknown; details?: unknown } } | undefined
  )?.error;
  if (error && typeof error.code === 'string') {
    return new AuthzError({
      code: error.code,
      message: typeof error.message === 'string' ? error.message : error.code,
      status,
      requestId: typeof error.request_id === 'string' ? error.request_id : requestId,
      retryAfter,
      details: Array.isArray(error.details) ? (error.details as ErrorDetail[]) : [],
    });
  }
  const snippet = text.length > 200 ? `${text.slice(0, 200)}...` : text;
  return new AuthzError({
    code: CLIENT_ERROR_CODES.unexpectedResponse,
    message: `HTTP ${status} without an error body: ${snippet}`,
    status,
    requestId,
    retryAfter,
  });
}
