/**
 * Transient store failures: the errors a store call may meet that say nothing
 * about the call itself (the connection dropped, the server is restarting or out
 * of connections, a serialization failure or deadlock), so the same call may
 * succeed a moment later. `retryTransient` retries such a call in-process with
 * p-retry (exponential backoff); any other error is thrown at once.
 */
import pRetry from 'p-retry';

/**
 * SQLSTATE classes and codes worth retrying: 08 connection, 53 insufficient
 * resources, 57P01-03 shutdown / cannot connect now, 40001 / 40P01, 25006 read
 * only (a standby or a demoted primary: after a failover the next connection
 * reaches the new primary).
 */
const TRANSIENT_SQLSTATE = /^(08|53)...$|^57P0[123]$|^40001$|^40P01$|^25006$/;

/** Errors of the socket or of postgres.js itself that mean the connection, not the query, failed. */
const TRANSIENT_CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // A host name that does not resolve for now (a DNS-based failover, a restarting resolver).
  'ENOTFOUND',
  'EAI_AGAIN',
  // Node's stream errors of a socket closed under a write.
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
  'ERR_SOCKET_CLOSED',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

export function isTransientStoreError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return TRANSIENT_SQLSTATE.test(code) || TRANSIENT_CONNECTION_CODES.has(code);
}

export interface RetryTransientOptions {
  /** Retries after the first try (default 4: 5 tries over about 1.5 s). */
  retries?: number;
  /** First pause in ms, doubled each time up to `maxTimeout` (default 50 and 800). */
  minTimeout?: number;
  maxTimeout?: number;
  /** Told of each failed try that will be retried. */
  onRetry?: (error: unknown, attempt: number) => void;
}

export function retryTransient<T>(call: () => Promise<T>, options: RetryTransientOptions = {}): Promise<T> {
  return pRetry(call, {
    retries: options.retries ?? 4,
    minTimeout: options.minTimeout ?? 50,
    maxTimeout: options.maxTimeout ?? 800,
    factor: 2,
    randomize: true,
    shouldRetry: ({ error }) => isTransientStoreError(error),
    onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
      if (retriesLeft > 0 && isTransientStoreError(error)) options.onRetry?.(error, attemptNumber);
    },
  });
}
