/**
 * The platform limit per API key without a store call per request: each process
 * leases tokens from the key's GCRA row (store/limits.ts) a few at a time and
 * admits locally while it holds some.
 *
 * A lease of k is one GCRA check of cost k (interval k·T on the same row, so it
 * passes only while the bucket holds k tokens and moves it by k). Refusals stay
 * exact: once a lease is refused, the process checks every request at cost 1
 * (batched, as before) until the bucket could hold k tokens again. Tokens leased
 * are taken from the bucket when leased, so across any number of processes the
 * admitted requests never exceed the bucket's bound by more than what each
 * process holds unused (at most k - 1 each); unused tokens lapse after
 * LEASE_LIFETIME_MS of the service clock (spent, never returned: the error is on
 * the side of refusing early).
 *
 * A step of the service clock never stretches this local state: a lease and an
 * exact spell hold only while the clock reads between the moment they began and
 * their end, so after a step back the process leases (or checks exactly) at once
 * instead of keeping stale tokens or checking every request in the store for as
 * long as the step.
 */
import { apiKeyRate, type RateCheck } from './limit-request.js';

/** A lease is at most this share of one second's allowance... */
const LEASE_SHARE = 1 / 20;
/** ...and at most this many tokens. */
const MAX_LEASE = 256;
export const LEASE_LIFETIME_MS = 1_000;

/** What a request does about its key's limit. */
export type KeyAdmission =
  | { kind: 'off' }
  /** Admitted from this process's lease: no store call. */
  | { kind: 'local' }
  /** Send `check` with the request's other limits, then call `settle`. */
  | { kind: 'store'; check: RateCheck; lease: number }
  /** Another request of this process is leasing for the key: wait, then ask again. */
  | { kind: 'wait'; until: Promise<void> };

interface KeyState {
  tokens: number;
  leasedAtMs: number;
  lapsesAtMs: number;
  /** Set while one request's lease is in the store. */
  leasing: Promise<void> | null;
  wake: (() => void) | null;
  /** From exactFromMs until exactUntilMs leases would be refused: check each request at cost 1. */
  exactFromMs: number;
  exactUntilMs: number;
}

/** `from <= now < until`: a span of the service clock that a step back ends at once. */
const within = (nowMs: number, fromMs: number, untilMs: number): boolean => fromMs <= nowMs && nowMs < untilMs;

export class KeyLeases {
  /** Tokens per lease; 1 means every request is checked in the store. */
  readonly leaseSize: number;
  private readonly keys = new Map<string, KeyState>();

  constructor(private readonly perSecond: number) {
    this.leaseSize = perSecond === 0 ? 0 : Math.max(1, Math.min(MAX_LEASE, Math.floor(perSecond * LEASE_SHARE)));
  }

  admit(keyId: string, nowMs: number): KeyAdmission {
    if (this.perSecond === 0) return { kind: 'off' };
    const exact = { kind: 'store', check: apiKeyRate(keyId, this.perSecond), lease: 1 } as const;
    if (this.leaseSize === 1) return exact;
    let s = this.keys.get(keyId);
    if (!s) {
      s = { tokens: 0, leasedAtMs: 0, lapsesAtMs: 0, leasing: null, wake: null, exactFromMs: 0, exactUntilMs: 0 };
      this.keys.set(keyId, s);
    }
    if (s.tokens > 0 && within(nowMs, s.leasedAtMs, s.lapsesAtMs)) {
      s.tokens--;
      return { kind: 'local' };
    }
    if (within(nowMs, s.exactFromMs, s.exactUntilMs)) return exact;
    if (s.leasing) return { kind: 'wait', until: s.leasing };
    s.leasing = new Promise<void>((resolve) => (s.wake = resolve));
    const k = this.leaseSize;
    return { kind: 'store', check: { ...exact.check, interval_ms: exact.check.interval_ms * k }, lease: k };
  }

  /**
   * After the store answered a `store` admission: `passed` when every limiter of
   * the request passed (the lease was granted), else `retryAfterMs` says when the
   * key's bucket could hold the lease. Returns true when a refused lease should be
   * retried at cost 1 (the request may still pass exactly).
   */
  settle(keyId: string, lease: number, nowMs: number, passed: boolean, keyRefusedForMs: number | null): boolean {
    if (lease === 1) return false;
    const s = this.keys.get(keyId)!;
    if (passed) {
      s.tokens = lease - 1;
      s.leasedAtMs = nowMs;
      s.lapsesAtMs = nowMs + LEASE_LIFETIME_MS;
    } else if (keyRefusedForMs !== null) {
      s.exactFromMs = nowMs;
      s.exactUntilMs = nowMs + keyRefusedForMs;
    }
    s.leasing = null;
    s.wake?.();
    s.wake = null;
    return !passed && keyRefusedForMs !== null;
  }

  /** Releases waiters when a lease's store call failed (they will lease again). */
  abandon(keyId: string, lease: number): void {
    if (lease === 1) return;
    const s = this.keys.get(keyId);
    if (!s) return;
    s.leasing = null;
    s.wake?.();
    s.wake = null;
  }
}
