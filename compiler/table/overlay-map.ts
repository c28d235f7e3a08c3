/**
 * A read-only map made of a base map and a few changes on top, so that a patched
 * table does not copy its 100,000-entry id map for each changed policy. The
 * changes are folded into a fresh base once they grow past a limit.
 */

const REMOVED = Symbol('removed');

/** Changes kept on top of a base before they are folded into a new base. */
export const OVERLAY_LIMIT = 1024;

export class OverlayMap<K, V> implements ReadonlyMap<K, V> {
  readonly size: number;

  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    private readonly changes: ReadonlyMap<K, V | typeof REMOVED>,
  ) {
    let size = base.size;
    for (const [k, v] of changes) {
      const inBase = base.has(k);
      if (v === REMOVED) size -= inBase ? 1 : 0;
      else size += inBase ? 0 : 1;
    }
    this.size = size;
  }

  /**
   * `map` with `remove` taken out and `set` put in (set wins over remove for a key
   * in both), without copying `map` while the changes stay small.
   *
   * @example
   * const next = OverlayMap.with(new Map([['a', 1]]), ['a'], [['b', 2]]);
   * next.get('a'); // undefined
   * next.get('b'); // 2
   */
  static with<K, V>(map: ReadonlyMap<K, V>, remove: Iterable<K>, set: Iterable<readonly [K, V]>): ReadonlyMap<K, V> {
    const base = map instanceof OverlayMap ? (map.base as ReadonlyMap<K, V>) : map;
    const changes = new Map<K, V | typeof REMOVED>(
      map instanceof OverlayMap ? (map.changes as ReadonlyMap<K, V | typeof REMOVED>) : [],
    );
    for (const k of remove) changes.set(k, REMOVED);
    for (const [k, v] of set) changes.set(k, v);
    const next = new OverlayMap(base, changes);
    return changes.size > OVERLAY_LIMIT ? new Map(next) : next;
  }

  get(key: K): V | undefined {
    const change = this.changes.get(key);
    if (change === undefined) return this.base.get(key);
    return change === REMOVED ? undefined : change;
  }

  has(key: K): boolean {
    const change = this.changes.get(key);
    return change === undefined ? this.base.has(key) : change !== REMOVED;
  }

  *entries(): MapIterator<[K, V]> {
    for (const [k, v] of this.base) if (!this.changes.has(k)) yield [k, v];
    for (const [k, v] of this.changes) if (v !== REMOVED) yield [k, v];
  }

  *keys(): MapIterator<K> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callback.call(thisArg, v, k, this);
  }
}
