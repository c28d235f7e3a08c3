/**
 * Errors as typed values. Each class carries its code (docs/errors.md#error-codes) (static `code`) and
 * HTTP status; http/error-handler.ts is the one place that turns them into
 * responses ({ error: { code, message, request_id } }: docs/api.md#conventions).
 */
export interface ErrorDetail {
  /** JSON pointer into the input (`/` for the whole of it). */
  path: string;
  message: string;
  /** 1-based line and column of the problem, for input read from YAML (policies sent as application/yaml). */
  line?: number;
  column?: number;
}

export class ApiError extends Error {
  static readonly code: string = 'internal.error';
  static readonly status: number = 500;
  readonly details?: ErrorDetail[];
  /** Extra response headers (e.g. Retry-After). */
  readonly headers?: Record<string, string>;

  constructor(message: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = new.target.name;
    if (options.details) this.details = options.details;
    if (options.headers) this.headers = options.headers;
  }

  get code(): string {
    return (this.constructor as typeof ApiError).code;
  }

  get status(): number {
    return (this.constructor as typeof ApiError).status;
  }
}

// --- authentication (docs/api.md#authentication-and-environments) ---------------------------------------------------
export class InvalidKeyError extends ApiError {
  static override readonly code = 'auth.invalid_key';
  static override readonly status = 401;
}
export class ScopeInsufficientError extends ApiError {
  static override readonly code = 'auth.scope_insufficient';
  static override readonly status = 403;
}
export class TokenExpiredError extends ApiError {
  static override readonly code = 'auth.expired';
  static override readonly status = 401;
}
export class SignatureInvalidError extends ApiError {
  static override readonly code = 'auth.signature_invalid';
  static override readonly status = 401;
}

// --- validation (docs/api.md#conventions) -----------------------------------
export class MissingFieldError extends ApiError {
  static override readonly code = 'validation.missing_field';
  static override readonly status = 400;
}
export class InvalidFieldError extends ApiError {
  static override readonly code = 'validation.invalid_field';
  static override readonly status = 400;
}
export class InvalidUrlError extends ApiError {
  static override readonly code = 'validation.invalid_url';
  static override readonly status = 400;
}
export class InvalidActionError extends ApiError {
  static override readonly code = 'validation.invalid_action';
  static override readonly status = 400;
}
export class InvalidJsonError extends ApiError {
  static override readonly code = 'validation.invalid_json';
  static override readonly status = 400;
}
export class BodyTooLargeError extends ApiError {
  static override readonly code = 'validation.body_too_large';
  static override readonly status = 413;
}
export class UnsupportedMediaTypeError extends ApiError {
  static override readonly code = 'validation.unsupported_media_type';
  static override readonly status = 415;
}
export class InvalidPolicyError extends ApiError {
  static override readonly code = 'validation.invalid_policy';
  static override readonly status = 400;
}
export class InvalidBundleError extends ApiError {
  static override readonly code = 'validation.invalid_bundle';
  static override readonly status = 400;
}
export class TooManyPoliciesError extends ApiError {
  static override readonly code = 'validation.too_many_policies';
  static override readonly status = 400;
}
export class TooManyLabelsError extends ApiError {
  static override readonly code = 'validation.too_many_labels';
  static override readonly status = 400;
}

// --- decisions (docs/api.md#decisions) -------------------------------------------------------
export class DecisionNotFoundError extends ApiError {
  static override readonly code = 'decision.not_found';
  static override readonly status = 404;
}
export class DecisionAlreadyConfirmedError extends ApiError {
  static override readonly code = 'decision.already_confirmed';
  static override readonly status = 409;
}
export class DecisionExpiredError extends ApiError {
  static override readonly code = 'decision.expired';
  static override readonly status = 410;
}
export class DecisionNotPendingError extends ApiError {
  static override readonly code = 'decision.not_pending';
  static override readonly status = 409;
}

// --- human review (extension: docs/reviews.md#the-rules) ------------------------------
export class DecisionNotReviewableError extends ApiError {
  static override readonly code = 'decision.not_reviewable';
  static override readonly status = 409;
}
export class DecisionAlreadyReviewedError extends ApiError {
  static override readonly code = 'decision.already_reviewed';
  static override readonly status = 409;
}
export class DecisionAwaitingApprovalError extends ApiError {
  static override readonly code = 'decision.awaiting_approval';
  static override readonly status = 409;
}
export class DecisionOutputRecordedError extends ApiError {
  static override readonly code = 'decision.output_recorded';
  static override readonly status = 409;
}
export class SelfReviewError extends ApiError {
  static override readonly code = 'review.self_review';
  static override readonly status = 403;
}

// --- sessions (extension: docs/api.md#sessions) ------------------------------
export class SessionNotFoundError extends ApiError {
  static override readonly code = 'session.not_found';
  static override readonly status = 404;
}
export class SessionFullError extends ApiError {
  static override readonly code = 'session.too_many_labels';
  static override readonly status = 409;
}

// --- other resources ----------------------------------------------------------
export class PolicyNotFoundError extends ApiError {
  static override readonly code = 'policy.not_found';
  static override readonly status = 404;
}
export class PolicyConflictError extends ApiError {
  static override readonly code = 'policy.already_exists';
  static override readonly status = 409;
}
export class AgentNotFoundError extends ApiError {
  static override readonly code = 'agent.not_found';
  static override readonly status = 404;
}
export class WebhookNotFoundError extends ApiError {
  static override readonly code = 'webhook.not_found';
  static override readonly status = 404;
}
export class DeliveryNotFoundError extends ApiError {
  static override readonly code = 'delivery.not_found';
  static override readonly status = 404;
}
export class EventNotFoundError extends ApiError {
  static override readonly code = 'event.not_found';
  static override readonly status = 404;
}
export class AccountNotFoundError extends ApiError {
  static override readonly code = 'account.not_found';
  static override readonly status = 404;
}
export class ApiKeyNotFoundError extends ApiError {
  static override readonly code = 'api_key.not_found';
  static override readonly status = 404;
}
export class AdminAuthError extends ApiError {
  static override readonly code = 'auth.invalid_admin_token';
  static override readonly status = 401;
}
export class MetricsAuthError extends ApiError {
  static override readonly code = 'auth.invalid_metrics_token';
  static override readonly status = 401;
}
export class RouteNotFoundError extends ApiError {
  static override readonly code = 'route.not_found';
  static override readonly status = 404;
}

// --- idempotency keys (Idempotency-Key header) -----------------------------------
export class IdempotencyKeyReusedError extends ApiError {
  static override readonly code = 'idempotency.key_reused';
  static override readonly status = 400;
}
export class IdempotencyInProgressError extends ApiError {
  static override readonly code = 'idempotency.in_progress';
  static override readonly status = 409;
}

// --- limits and availability ----------------------------------------------------
export class RateLimitExceededError extends ApiError {
  static override readonly code = 'rate_limit.exceeded';
  static override readonly status = 429;
  /** Whole seconds (>= 1), as sent in Retry-After. */
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
    super(message, { headers: { 'retry-after': String(seconds) } });
    this.retryAfterSeconds = seconds;
  }
}
/** Seconds a 503 service.unavailable asks the caller to wait (Retry-After): a lost primary is replaced in seconds. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

/** 503 service.unavailable, always with Retry-After (docs/operations.md#connection-limits). */
export class ServiceUnavailableError extends ApiError {
  static override readonly code = 'service.unavailable';
  static override readonly status = 503;
  constructor(message: string, options: { details?: ErrorDetail[]; retryAfterSeconds?: number } = {}) {
    const seconds = Math.max(1, Math.ceil(options.retryAfterSeconds ?? UNAVAILABLE_RETRY_AFTER_SECONDS));
    super(message, {
      ...(options.details ? { details: options.details } : {}),
      headers: { 'retry-after': String(seconds) },
    });
  }
}
export class InternalError extends ApiError {
  static override readonly code = 'internal.error';
  static override readonly status = 500;
}

/** Every error class, for the README check and the OpenAPI document. */
export const ERROR_CLASSES = [
  InvalidKeyError,
  ScopeInsufficientError,
  TokenExpiredError,
  SignatureInvalidError,
  MissingFieldError,
  InvalidFieldError,
  InvalidActionError,
  InvalidUrlError,
  InvalidJsonError,
  BodyTooLargeError,
  UnsupportedMediaTypeError,
  InvalidPolicyError,
  InvalidBundleError,
  TooManyPoliciesError,
  TooManyLabelsError,
  DecisionNotFoundError,
  DecisionAlreadyConfirmedError,
  DecisionExpiredError,
  DecisionNotPendingError,
  DecisionNotReviewableError,
  DecisionAlreadyReviewedError,
  DecisionAwaitingApprovalError,
  DecisionOutputRecordedError,
  SelfReviewError,
  SessionNotFoundError,
  SessionFullError,
  PolicyNotFoundError,
  PolicyConflictError,
  AgentNotFoundError,
  WebhookNotFoundError,
  DeliveryNotFoundError,
  EventNotFoundError,
  AccountNotFoundError,
  ApiKeyNotFoundError,
  AdminAuthError,
  MetricsAuthError,
  RouteNotFoundError,
  IdempotencyKeyReusedError,
  IdempotencyInProgressError,
  RateLimitExceededError,
  ServiceUnavailableError,
  InternalError,
] as const;
