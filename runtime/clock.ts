/**
 * The one source of time. Every time-based behaviour (decision and token TTL,
 * rate windows, budget periods, webhook retries) reads `clock.now()`; tests and
 * `AUTHZ_TEST_CLOCK=1` servers use a clock that only moves when told to.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Present on a clock that follows real time: how far it is set from it on
   * purpose (0 for the system clock; the test clock's offset). State shared by
   * several processes (the rate limiters) is then judged on the database's clock
   * plus this offset, so processes whose clocks disagree, or a clock that steps,
   * judge it alike. Absent on a clock that does not follow real time (ManualClock):
   * its `now()` is used as it is.
   */
  realTimeOffsetMs?(): number;
}

/** A clock that follows real time (see {@link Clock.realTimeOffsetMs}). */
export interface RealTimeClock extends Clock {
  realTimeOffsetMs(): number;
}

export const systemClock: RealTimeClock = { now: () => Date.now(), realTimeOffsetMs: () => 0 };

/**
 * Where the test clock's offset is kept across restarts (the store: domain/clock-offset.ts).
 * `add` adds to the stored offset and returns the stored offset after the change.
 */
export interface ClockOffsetStore {
  add(deltaMs: number): Promise<number>;
}

/**
 * Follows a real-time clock plus an offset that `advance` grows (POST /admin/clock).
 * With a store, the offset is the stored one (loaded at start, saved on each advance).
 *
 * @example
 * const clock = new AdjustableClock(systemClock, await loadOffset());
 * await clock.advance(3600); // an hour later, for every time-based behaviour
 */
export class AdjustableClock implements RealTimeClock {
  constructor(
    private readonly base: RealTimeClock = systemClock,
    private offsetMs = 0,
    private readonly store: ClockOffsetStore | null = null,
  ) {}
  now(): number {
    return this.base.now() + this.offsetMs;
  }
  realTimeOffsetMs(): number {
    return this.base.realTimeOffsetMs() + this.offsetMs;
  }
  /** Moves the clock forward by `seconds` (and saves the offset, with a store). */
  async advance(seconds: number): Promise<void> {
    if (this.store) this.offsetMs = await this.store.add(seconds * 1000);
    else this.offsetMs += seconds * 1000;
  }
}

/** A clock that stands still until moved (unit tests). */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
