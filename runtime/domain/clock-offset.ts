/**
 * The service clock's stored offset, production code behind the test clock
 * (AUTHZ_TEST_CLOCK=1, docs/operations.md#the-test-clock): real time plus an offset that POST /admin/clock grows, stored so that
 * a restart keeps the service's time where the clock left it. Processes sharing
 * a store share the offset: each advance adds to the stored one and adopts the
 * result; a process reads it at start.
 */
import { AdjustableClock, systemClock, type RealTimeClock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { addTestClockOffset, loadTestClockOffset } from '../store/clock-offset.js';

/**
 * Opens the test clock with the stored offset.
 *
 * @example
 * const clock = await openTestClock(store.sql);
 * await clock.advance(86_400); // a day later, also after a restart
 */
export async function openTestClock(sql: Sql, base: RealTimeClock = systemClock): Promise<AdjustableClock> {
  return new AdjustableClock(base, await loadTestClockOffset(sql), {
    add: (deltaMs) => addTestClockOffset(sql, deltaMs),
  });
}
