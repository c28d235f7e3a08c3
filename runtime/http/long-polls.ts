/**
 * Long polls per API key (docs/operations.md#connection-limits): `GET /v1/decisions/:id?wait=`
 * holds a connection up to 60 s, so one key may hold at most 100 at once in a
 * process; one more is 429 rate_limit.exceeded with Retry-After.
 */
import { RateLimitExceededError } from '../errors/api-error.js';

/** Most long polls one API key holds at once. */
export const MAX_LONG_POLLS_PER_KEY = 100;

export class LongPolls {
  private readonly active = new Map<string, number>();

  constructor(private readonly max = MAX_LONG_POLLS_PER_KEY) {}

  /**
   * Takes one of the key's slots; returns its release (call it once the answer
   * is sent). Throws RateLimitExceededError when the key holds `max` already.
   *
   * @example
   * const release = longPolls.enter(principal.keyId);
   * try { return await reviews.wait(...); } finally { release(); }
   */
  enter(keyId: string): () => void {
    const n = this.active.get(keyId) ?? 0;
    if (n >= this.max) {
      throw new RateLimitExceededError(
        `this API key holds ${this.max} long polls (?wait=) already: wait for one to end, or poll without wait`,
        1,
      );
    }
    this.active.set(keyId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.active.get(keyId) ?? 1) - 1;
      if (left === 0) this.active.delete(keyId);
      else this.active.set(keyId, left);
    };
  }

  /** How many long polls the key holds now. */
  held(keyId: string): number {
    return this.active.get(keyId) ?? 0;
  }
}
