/**
 * A held scope key's history entries in memory (runtime/history/leases.ts),
 * kept column by column: what every read compares (times, kind, action) in
 * typed arrays, the rest (amounts, MATCH values) in plain arrays read only by
 * the checks that need them, made only once an entry has such a value.
 *
 * Why columns: a key is read on every decision of it, and its entries arrive
 * one by one over the window, so as objects they lie scattered over the heap
 * (each time a boxed number besides): on a loaded machine a count over a
 * session's hundred entries cost tens of microseconds in cache misses, grew
 * with the session, and every entry was one more object for the collector to
 * trace. Here a count over a hundred entries reads a few kilobytes in order.
 */
import { actionPatternMatches, jsonEqual } from '../../compiler/index.js';
import type { LeasedEntry } from '../store/history-leases.js';
import type { HistoryCheck } from '../store/history.js';
import { sumDecimals } from './decimal.js';
import { NO_MATCH_VALUES } from './plan.js';

/** An entry as the log takes it (what {@link EntryLog.value} reads of it). */
export type LoggedEntry = Pick<
  LeasedEntry,
  'action' | 'kind' | 'amount' | 'confirmed_amount' | 'match_values' | 'evaluated_at_ms' | 'keep_until_ms'
>;

const INITIAL = 8;

export class EntryLog {
  private size = 0;
  private at = new Float64Array(INITIAL);
  private until = new Float64Array(INITIAL);
  /** Index into `names`. */
  private action = new Uint32Array(INITIAL);
  /** 1: denied, 0: counted. */
  private denied = new Uint8Array(INITIAL);
  // Mostly empty (no amount, none confirmed, no MATCH value): no array until an entry has one, so a
  // long-held key's memory is a few typed arrays that the collector does not walk slot by slot.
  private readonly amounts = new SparseColumn<string | null>(null);
  private readonly confirmed = new SparseColumn<string | null>(null);
  private readonly matches = new SparseColumn<Record<string, unknown>>(NO_MATCH_VALUES);
  /** The log's distinct actions (a key sees few). */
  private names: string[] = [];
  private nameIds = new Map<string, number>();
  /** The id of the action last pushed. */
  private lastName = 0;
  /** Per actions list, its flags over `names` when the log had `names` actions ({@link wanted}). */
  private wantedBy = new Map<readonly string[], { names: number; flags: Uint8Array | null }>();

  /**
   * A log of these entries, in their order.
   *
   * @example
   * const log = EntryLog.of([{ action: 'payments.refund', kind: 'counted', amount: null, confirmed_amount: null, match_values: {}, evaluated_at_ms: Date.now(), keep_until_ms: Date.now() + 3_600_000 }]);
   * log.length; // 1
   */
  static of(entries: readonly LoggedEntry[]): EntryLog {
    const log = new EntryLog();
    for (const e of entries) log.push(e);
    return log;
  }

  /** How many entries it holds. */
  get length(): number {
    return this.size;
  }

  /**
   * Appends an entry.
   *
   * @example
   * const log = new EntryLog();
   * log.push({ action: 'payments.refund', kind: 'counted', amount: '12.5', confirmed_amount: null, match_values: {}, evaluated_at_ms: Date.now(), keep_until_ms: Date.now() + 3_600_000 });
   */
  push(e: LoggedEntry): void {
    if (this.size === this.at.length) this.grow(this.size * 2);
    const i = this.size++;
    this.at[i] = e.evaluated_at_ms;
    this.until[i] = e.keep_until_ms;
    this.action[i] = this.nameId(e.action);
    this.denied[i] = e.kind === 'denied' ? 1 : 0;
    this.amounts.set(i, e.amount);
    this.confirmed.set(i, e.confirmed_amount);
    this.matches.set(i, e.match_values);
  }

  /**
   * Drops the entries past their keep_until at `nowMs`; whether any was.
   *
   * @example
   * const dropped = log.dropExpired(Date.now());
   */
  dropExpired(nowMs: number): boolean {
    let kept = 0;
    for (let i = 0; i < this.size; i++) {
      if (this.until[i]! < nowMs) continue;
      if (kept !== i) {
        this.at[kept] = this.at[i]!;
        this.until[kept] = this.until[i]!;
        this.action[kept] = this.action[i]!;
        this.denied[kept] = this.denied[i]!;
        this.amounts.set(kept, this.amounts.get(i));
        this.confirmed.set(kept, this.confirmed.get(i));
        this.matches.set(kept, this.matches.get(i));
      }
      kept++;
    }
    if (kept === this.size) return false;
    this.size = kept;
    this.amounts.truncate(kept);
    this.confirmed.truncate(kept);
    this.matches.truncate(kept);
    if (kept * 4 < this.at.length && this.at.length > INITIAL) this.grow(Math.max(INITIAL, kept * 2));
    return true;
  }

  /**
   * A check's value over the entries at `atMs`, as authz_history_value
   * computes it from the store: the entries of its kind (denied for
   * `history.denied`, else counted) in its window and not past their
   * keep_until, of its actions, holding its MATCH values; a count, or the sum
   * of their confirmed amounts, else amounts (none: 0), added exactly.
   *
   * @example
   * log.value({ scope: 'session', key: 'run-1', actions: ['payments.refund'], window_s: 3600, measure: 'count', match: {} }, Date.now());
   */
  value(c: HistoryCheck, atMs: number): number {
    const wanted = this.wanted(c.actions);
    if (wanted === null) return 0;
    const since = atMs - c.window_s * 1000;
    const denied = c.measure === 'denied' ? 1 : 0;
    const fields = Object.keys(c.match);
    // No entry holds a MATCH value: none holds the check's.
    if (fields.length > 0 && !this.matches.any) return 0;
    const { at, until, action } = this;
    let count = 0;
    const amounts: string[] | null = c.measure === 'sum' ? [] : null;
    for (let i = 0; i < this.size; i++) {
      if (this.denied[i] !== denied || at[i]! < since || until[i]! < atMs || wanted[action[i]!] === 0) continue;
      if (fields.length > 0 && !matchesAll(this.matches.get(i), c.match, fields)) continue;
      if (amounts === null) count++;
      else {
        const amount = this.confirmed.get(i) ?? this.amounts.get(i);
        if (amount !== null) amounts.push(amount);
      }
    }
    return amounts === null ? count : sumDecimals(amounts);
  }

  /**
   * Which of the log's actions these (a check's, or their patterns) name: a
   * flag per action id, or null for none. Kept per actions list (a probe's,
   * the same array for every check of it) until the log sees a new action.
   */
  private wanted(actions: readonly string[]): Uint8Array | null {
    const known = this.wantedBy.get(actions);
    if (known !== undefined && known.names === this.names.length) return known.flags;
    const flags = new Uint8Array(this.names.length);
    let any = false;
    for (let id = 0; id < this.names.length; id++) {
      const name = this.names[id]!;
      if (actions.some((p) => (p.includes('*') ? actionPatternMatches(p, name) : p === name))) {
        flags[id] = 1;
        any = true;
      }
    }
    // A few probes read a key: a handful of lists (bounded anyway).
    if (this.wantedBy.size >= 64) this.wantedBy.clear();
    this.wantedBy.set(actions, { names: this.names.length, flags: any ? flags : null });
    return any ? flags : null;
  }

  private nameId(name: string): number {
    // A key's entries are mostly of one action: the last one's id without hashing the name.
    if (this.names.length > 0 && this.names[this.lastName] === name) return this.lastName;
    let id = this.nameIds.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.nameIds.set(name, id);
    }
    this.lastName = id;
    return id;
  }

  private grow(capacity: number): void {
    const resize = <T extends Float64Array | Uint32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(capacity);
      b.set(a.subarray(0, Math.min(this.size, capacity)));
      return b;
    };
    this.at = resize(this.at, (n) => new Float64Array(n));
    this.until = resize(this.until, (n) => new Float64Array(n));
    this.action = resize(this.action, (n) => new Uint32Array(n));
    this.denied = resize(this.denied, (n) => new Uint8Array(n));
  }
}

/** Whether an entry's value is its column's default: null, or an object without keys. */
function isDefault(v: unknown): boolean {
  if (v === null) return true;
  if (typeof v !== 'object') return false;
  for (const _ in v) return false;
  return true;
}

/** A column of mostly default values: no array until one is not (each set in index order, as the log pushes). */
class SparseColumn<T> {
  private values: T[] | null = null;

  constructor(private readonly fallback: T) {}

  /** Whether some value is not the default. */
  get any(): boolean {
    return this.values !== null;
  }

  get(i: number): T {
    return this.values === null ? this.fallback : this.values[i]!;
  }

  set(i: number, v: T): void {
    if (this.values === null) {
      if (isDefault(v)) return;
      this.values = new Array<T>(i).fill(this.fallback);
    }
    this.values[i] = v;
  }

  truncate(n: number): void {
    if (this.values !== null) this.values.length = n;
  }
}

/** Whether the entry's MATCH values hold every one of the check's (a field the entry lacks matches nothing). */
function matchesAll(
  values: Record<string, unknown>,
  match: Record<string, unknown>,
  fields: readonly string[],
): boolean {
  for (const f of fields) if (!Object.hasOwn(values, f) || !jsonEqual(values[f], match[f])) return false;
  return true;
}
