/**
 * A bounded map whose entries are trusted for `ttlMs` of the service clock; when
 * full it starts over (a cheap bound: the entries are re-read from the store).
 */
import type { Clock } from '../clock.js';

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** The live entry, or undefined when absent or expired. */
  get(key: string): { value: V } | undefined {
    const hit = this.entries.get(key);
    return hit !== undefined && hit.until > this.clock.now() ? hit : undefined;
  }

  set(key: string, value: V): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, until: this.clock.now() + this.ttlMs });
  }

  /** Drops the entry (if any). */
  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Drops every entry whose value satisfies `test`. */
  deleteWhere(test: (value: V) => boolean): void {
    for (const [key, entry] of this.entries) if (test(entry.value)) this.entries.delete(key);
  }
}
