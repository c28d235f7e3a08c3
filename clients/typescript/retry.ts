/**
 * Retries of one client call (p-retry): network failures, timeouts, 5xx, 429
 * and 409 `idempotency.in_progress` are tried again after an exponential
 * backoff (`backoffMs`, doubled each time), or after the `Retry-After` the
 * service asked for when that is longer. Other answers (4xx) are final. The
 * caller keeps one `Idempotency-Key` for every attempt, so a retry never makes
 * a second decision.
 */
import pRetry from 'p-retry';
import { AuthzError, CLIENT_ERROR_CODES } from './errors.js';
import { abortedError } from './http.js';

/** What `onRetry` is told before the client waits and tries again. */
export interface RetryEvent {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  error: AuthzError;
  /** How long the client waits before the next attempt (backoff or Retry-After, the longer). */
  delayMs: number;
}

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff in ms; doubled for each later retry. */
  backoffMs: number;
  /** A `Retry-After` longer than this is not waited for: the 429 is thrown at once. */
  maxRetryAfterSeconds: number;
  onRetry?: (event: RetryEvent) => void | Promise<void>;
}

const RETRIED_CODES = new Set<string>([
  CLIENT_ERROR_CODES.networkError,
  CLIENT_ERROR_CODES.timeout,
  'idempotency.in_progress',
]);

/**
 * Whether another attempt may succeed: no answer, a 5xx, a 429, or a request with the same key still running.
 *
 * @example
 * isRetryable(new AuthzError({ code: 'rate_limit.exceeded', message: '', status: 429 })); // true
 */
export function isRetryable(error: AuthzError): boolean {
  if (RETRIED_CODES.has(error.code)) return true;
  return error.status !== null && (error.status >= 500 || error.status === 429);
}

const backoff = (policy: RetryPolicy, retriesConsumed: number) => policy.backoffMs * 2 ** retriesConsumed;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `attempt` until it succeeds, fails with an error that is not retryable, or the retries run out (then the last error is thrown).
 *
 * @example
 * const decision = await withRetries((n) => sendOnce(target, request), { retries: 3, backoffMs: 200, maxRetryAfterSeconds: 60 });
 */
export async function withRetries<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  policy: RetryPolicy,
  signal?: AbortSignal,
): Promise<T> {
  try {
    return await pRetry(attempt, {
      retries: policy.retries,
      factor: 2,
      minTimeout: policy.backoffMs,
      randomize: false,
      ...(signal ? { signal } : {}),
      shouldRetry: async ({ error, attemptNumber, retriesConsumed }) => {
        if (!(error instanceof AuthzError) || !isRetryable(error)) return false;
        const waitFor = error.retryAfter === null ? 0 : error.retryAfter * 1000;
        if (error.retryAfter !== null && error.retryAfter > policy.maxRetryAfterSeconds) return false;
        const base = backoff(policy, retriesConsumed);
        await policy.onRetry?.({ attempt: attemptNumber, error, delayMs: Math.max(base, waitFor) });
        // p-retry then waits `base`; the rest of a longer Retry-After is waited here.
        await sleep(waitFor - base, signal);
        return true;
      },
    });
  } catch (error) {
    if (signal?.aborted)
      throw error instanceof AuthzError && error.code === CLIENT_ERROR_CODES.aborted ? error : abortedError(signal);
    throw error;
  }
}
