/**
 * The last net under a store outage: a promise rejection nothing handled whose
 * reason says the store is unavailable (store/unavailable.ts: a dropped
 * connection, no primary during a failover) is logged and the process keeps
 * serving, answering 503 until the store is back, instead of ending as Node
 * does by default. Any other unhandled rejection still ends the process with
 * its stack, as before: those are bugs, not outages.
 *
 * @example
 * const unguard = guardStoreOutages((reason) => app.log.warn({ err: reason }, 'store unavailable (unhandled rejection)'));
 * // ... at shutdown, optionally:
 * unguard();
 */
import { isStoreUnavailable } from './store/unavailable.js';

export function guardStoreOutages(onOutage: (reason: unknown) => void): () => void {
  const handler = (reason: unknown) => {
    if (isStoreUnavailable(reason)) {
      onOutage(reason);
      return;
    }
    // Not an outage: what Node does without a handler (--unhandled-rejections=throw).
    throw reason;
  };
  process.on('unhandledRejection', handler);
  return () => {
    process.removeListener('unhandledRejection', handler);
  };
}
