/**
 * Requests waiting for a decision's review to change (`GET /v1/decisions/:id?wait=N`),
 * per process, keyed by decision. Nothing here polls the store: a waiter sleeps
 * until `wake` names its decision (the process that changed the review, at
 * once; every other process through `NOTIFY authz_reviews`, background/
 * reviews.ts) or its time is up; then the decision is read once. Every
 * waiter woken by one `wake` gets the same {@link Wake}, so they can share
 * that one read (domain/reviews.ts does).
 */
import type { ReviewChange } from '../store/channels.js';
import { reviewPayload } from '../store/channels.js';

/** One call of `wake`: the same object for every waiter it woke. */
export type Wake = object;

export interface Waiter {
  /** Resolves with the wake when woken, null when `ms` pass (or `signal` aborts) first. Already woken: at once. */
  wait(ms: number, signal?: AbortSignal): Promise<Wake | null>;
  /** Forgets the waiter (always call it, e.g. in `finally`). */
  cancel(): void;
}

/** The registry's key of a decision. */
export const waiterKey = (c: ReviewChange): string => reviewPayload(c);

export class ReviewWaiters {
  private readonly waiting = new Map<string, Set<(wake: Wake) => void>>();

  /**
   * A waiter for the decision, registered now: register before reading the
   * decision, so that a change between the read and the wait still wakes it.
   *
   * @example
   * const waiter = waiters.register(key);
   * try {
   *   if (!stillAwaiting(await read())) return;
   *   await waiter.wait(30_000);
   *   return read();
   * } finally {
   *   waiter.cancel();
   * }
   */
  register(key: string): Waiter {
    let woken: Wake | null = null;
    let resolve: ((value: Wake | null) => void) | null = null;
    const onWake = (wake: Wake) => {
      woken = wake;
      resolve?.(wake);
    };
    let set = this.waiting.get(key);
    if (!set) this.waiting.set(key, (set = new Set()));
    set.add(onWake);
    const cancel = () => {
      const current = this.waiting.get(key);
      if (!current) return;
      current.delete(onWake);
      if (current.size === 0) this.waiting.delete(key);
    };
    return {
      cancel,
      wait(ms, signal) {
        if (woken) return Promise.resolve(woken);
        return new Promise<Wake | null>((done) => {
          const finish = (value: Wake | null) => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            resolve = null;
            done(value);
          };
          const onAbort = () => finish(null);
          const timer = setTimeout(() => finish(null), Math.max(0, ms));
          resolve = finish;
          if (signal?.aborted) finish(null);
          else signal?.addEventListener('abort', onAbort, { once: true });
        });
      },
    };
  }

  /** Wakes every waiter of the decision; answers how many. */
  wake(key: string): number {
    const set = this.waiting.get(key);
    if (!set) return 0;
    this.waiting.delete(key);
    const wake: Wake = {};
    for (const onWake of set) onWake(wake);
    return set.size;
  }

  /** Wakes every waiter (their requests read again): after a missed notification, e.g. a reconnect. */
  wakeAll(): number {
    let n = 0;
    for (const key of [...this.waiting.keys()]) n += this.wake(key);
    return n;
  }

  /** Waiters registered now. */
  get size(): number {
    let n = 0;
    for (const set of this.waiting.values()) n += set.size;
    return n;
  }
}
