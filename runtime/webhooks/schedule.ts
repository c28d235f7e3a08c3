/**
 * The retry schedule (docs/webhooks-and-events.md#delivery): after a failed attempt,
 * the next one is due this many seconds after it; after the sixth retry fails,
 * the delivery is abandoned.
 */
export const RETRY_DELAYS_SECONDS = [30, 5 * 60, 30 * 60, 2 * 3600, 8 * 3600, 14 * 3600] as const;

/** Attempts in all: the first and six retries. */
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/** When attempt `attempt` (1-based), made at `attemptMs`, failed: the next attempt's time, or null (abandon). */
export function nextAttemptAfterFailure(attempt: number, attemptMs: number): number | null {
  const delay = RETRY_DELAYS_SECONDS[attempt - 1];
  return delay === undefined ? null : attemptMs + delay * 1000;
}
