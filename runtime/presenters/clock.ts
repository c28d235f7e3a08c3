/** The public form of the test clock (POST /admin/clock, on servers started with AUTHZ_TEST_CLOCK=1). */

/**
 * The service clock's time after a move.
 *
 * @example
 * clockResource(0); // => { object: 'clock', now: '1970-01-01T00:00:00.000Z' }
 */
export function clockResource(nowMs: number): Record<string, unknown> {
  return { object: 'clock', now: new Date(nowMs).toISOString() };
}
