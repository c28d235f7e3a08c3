/**
 * The quiet default log of `authz serve` (LOG_LEVEL unset): no line per
 * request, one per error (pino at `warn`), and every minute one summary line
 * of the requests answered, when there were any:
 *
 *   2026-11-26T16:01:00.000Z requests in the last 60 s: 1,204 (2xx 1,180, 4xx 24, 5xx 0); slowest 38 ms
 *
 * and at the stop what came since the last one. LOG_LEVEL=info (or debug,
 * trace) logs every request instead, as pino JSON lines.
 */

/** The pino level of the quiet default (LOG_LEVEL unset): warnings and errors, one line each; no request lines. */
export const QUIET_LOG_LEVEL = 'warn';

/** Counts answered requests by status class; {@link RequestSummary.take} reads and resets. */
export class RequestSummary {
  private counts = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
  private total = 0;
  private slowestMs = 0;

  /** One answered request. */
  record(statusCode: number, elapsedMs: number): void {
    this.total += 1;
    const cls = statusCode >= 500 ? '5xx' : statusCode >= 400 ? '4xx' : statusCode >= 300 ? '3xx' : '2xx';
    this.counts[cls] += 1;
    if (elapsedMs > this.slowestMs) this.slowestMs = elapsedMs;
  }

  /**
   * The summary line of what was recorded since the last call (null when nothing
   * was), `when` saying over what time (`in the last 60 s`), and a fresh start.
   */
  take(when: string, at: Date): string | null {
    if (this.total === 0) return null;
    const n = (v: number) => v.toLocaleString('en-US');
    const c = this.counts;
    const redirects = c['3xx'] > 0 ? `, 3xx ${n(c['3xx'])}` : '';
    const line = `${at.toISOString()} requests ${when}: ${n(this.total)} (2xx ${n(c['2xx'])}${redirects}, 4xx ${n(c['4xx'])}, 5xx ${n(c['5xx'])}); slowest ${Math.round(this.slowestMs)} ms`;
    this.counts = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
    this.total = 0;
    this.slowestMs = 0;
    return line;
  }
}

/**
 * Writes the summary every `everyMs` (a timer that keeps no process alive);
 * `stop()` writes what is left and ends it.
 */
export function startRequestSummary(
  summary: RequestSummary,
  everyMs: number,
  now: () => number,
  write: (line: string) => void,
): { stop(): void } {
  const flush = (when: string) => {
    const line = summary.take(when, new Date(now()));
    if (line) write(line);
  };
  const timer = setInterval(() => flush(`in the last ${Math.round(everyMs / 1000)} s`), everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      flush('since the last summary');
    },
  };
}
