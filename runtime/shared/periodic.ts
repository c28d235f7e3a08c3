/**
 * Work repeated every `intervalMs` in the background (sweeps, reloads), one
 * round at a time: a round's failure goes to `onError`, the timer does not keep
 * the process alive, and `stop()` waits for the round under way.
 *
 * @example
 * const sweep = runPeriodically(() => releaseExpiredHolds(sql, clock.now()), 5000, log);
 * // ... on shutdown:
 * await sweep.stop();
 */
export function runPeriodically(round: () => Promise<unknown>, intervalMs: number, onError: (e: unknown) => void): { stop(): Promise<void> } {
  let running = true;
  let inFlight: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (running) inFlight = round().catch(onError);
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      running = false;
      clearInterval(timer);
      await inFlight;
    },
  };
}

/** A background task started at serve time: one round now (tests; the timer does the same), and stopping it. */
export interface Upkeep<Round = void> {
  runOnce(): Promise<Round>;
  stop(): Promise<void>;
}
