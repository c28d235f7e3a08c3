/**
 * The one source of time. Every time-based behaviour (decision and token TTL,
 * rate windows, budget periods, webhook retries) reads `clock.now()`; tests and
 * `AUTHZ_TEST_CLOCK=1` servers use a clock that only moves when told to.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Follows the system clock plus an offset that `advance` grows (POST /admin/clock). */
export class AdjustableClock implements Clock {
  private offsetMs = 0;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return this.base.now() + this.offsetMs;
  }
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
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
