/**
 * The platform limit per API key without a store call per request: each process
 * leases tokens from the key's GCRA row (store/limits.ts) a few at a time and
 * admits locally while it holds some.
 *
 * A lease of k is one GCRA check of cost k (interval k·T on the same row, so it
 * passes only while the bucket holds k tokens and moves it by k). The next lease
 * is asked for ahead, by the request that finds the tokens down to the low-water
 * mark (a quarter of a lease): the others go on spending what is left meanwhile,
 * so under steady load no request waits for a lease's round trip (before, every
 * request arriving while the tokens were out waited for it). Refusals stay
 * exact: once a lease is refused, the process spends what it still holds, then
 * checks every request at cost 1 (batched, as before) until the bucket could
 * hold k tokens again. Tokens leased are taken from the bucket when leased, so
 * across any number of processes the admitted requests never exceed the
 * bucket's bound by more than what each process holds unused (at most
 * k - 1 + the low-water mark each); unused tokens lapse LEASE_LIFETIME_MS of the
 * service clock after the lease that brought them (spent, never returned: the
 * error is on the side of refusing early).
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
/** The next lease is asked for when this share of a lease (rounded up) is left. */
const LOW_WATER_SHARE = 1 / 4;
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

/** The tokens of one lease not spent yet, valid from the lease until it lapses. */
interface Grant {
  tokens: number;
  fromMs: number;
  untilMs: number;
}

const NO_GRANT: Grant = Object.freeze({ tokens: 0, fromMs: 0, untilMs: 0 });

interface KeyState {
  /** The last lease's tokens, and what is left of the lease before it (spent first). */
  current: Grant;
  older: Grant;
  /** Set while one request's lease is in the store. */
  leasing: Promise<void> | null;
  wake: (() => void) | null;
  /** From exactFromMs until exactUntilMs leases would be refused: check each request at cost 1. */
  exactFromMs: number;
  exactUntilMs: number;
}

/** `from <= now < until`: a span of the service clock that a step back ends at once. */
const within = (nowMs: number, fromMs: number, untilMs: number): boolean => fromMs <= nowMs && nowMs < untilMs;

/** The tokens of `g` that may be spent at `nowMs`. */
const held = (g: Grant, nowMs: number): number => (within(nowMs, g.fromMs, g.untilMs) ? g.tokens : 0);

export class KeyLeases {
  /** Tokens per lease; 1 means every request is checked in the store. */
  readonly leaseSize: number;
  /** The next lease is asked for when this many tokens are left. */
  readonly lowWater: number;
  private readonly keys = new Map<string, KeyState>();

  constructor(private readonly perSecond: number) {
    this.leaseSize = perSecond === 0 ? 0 : Math.max(1, Math.min(MAX_LEASE, Math.floor(perSecond * LEASE_SHARE)));
    this.lowWater = this.leaseSize > 1 ? Math.ceil(this.leaseSize * LOW_WATER_SHARE) : 0;
  }

  admit(keyId: string, nowMs: number): KeyAdmission {
    if (this.perSecond === 0) return { kind: 'off' };
    const exact = { kind: 'store', check: apiKeyRate(keyId, this.perSecond), lease: 1 } as const;
    if (this.leaseSize === 1) return exact;
    let s = this.keys.get(keyId);
    if (!s) {
      s = { current: NO_GRANT, older: NO_GRANT, leasing: null, wake: null, exactFromMs: 0, exactUntilMs: 0 };
      this.keys.set(keyId, s);
    }
    const [older, current] = [held(s.older, nowMs), held(s.current, nowMs)];
    const exactSpell = within(nowMs, s.exactFromMs, s.exactUntilMs);
    if (older + current > 0) {
      // Low: this request asks for the next lease while the others spend the rest.
      if (older + current <= this.lowWater && !s.leasing && !exactSpell) return this.lease(s, exact.check);
      (older > 0 ? s.older : s.current).tokens--;
      return { kind: 'local' };
    }
    if (exactSpell) return exact;
    if (s.leasing) return { kind: 'wait', until: s.leasing };
    return this.lease(s, exact.check);
  }

  private lease(s: KeyState, check: RateCheck): KeyAdmission {
    s.leasing = new Promise<void>((resolve) => (s.wake = resolve));
    const k = this.leaseSize;
    return { kind: 'store', check: { ...check, interval_ms: check.interval_ms * k }, lease: k };
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
      // What is left of the lease before keeps its own span. Any older tokens are spent by now: a lease is asked
      // for ahead only once they are (two leases are held at most).
      s.older = s.current;
      s.current = { tokens: lease - 1, fromMs: nowMs, untilMs: nowMs + LEASE_LIFETIME_MS };
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
