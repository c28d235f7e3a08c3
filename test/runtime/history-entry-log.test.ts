/**
 * A lease holder's memory of a key (runtime/history/entry-log.ts), kept column
 * by column: for random entries and checks, its value equals a reference
 * computed entry by entry from docs/history.md#what-counts (written here, not the
 * module's code); dropping the entries past their keep_until at T changes no
 * value read at T or later, and the log keeps working as it shrinks and grows
 * again. That its value equals the store's (authz_history_value) on both
 * stores is history-leases-store.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { actionPatternMatches, jsonEqual } from '../../compiler/index.js';
import { sumDecimals } from '../../runtime/history/decimal.js';
import { EntryLog, type LoggedEntry } from '../../runtime/history/entry-log.js';
import type { HistoryCheck } from '../../runtime/store/history.js';
import { BASE, check as sharedCheck, entry as sharedEntry, loggedEntry } from './helpers/history-entries.js';

// The store's property test's entries, as the memory holds them; its checks, read under one session key.
const entry: fc.Arbitrary<LoggedEntry> = sharedEntry.map(loggedEntry);
const check: fc.Arbitrary<HistoryCheck> = sharedCheck.map((c) => ({ ...c, scope: 'session', key: 's1' }));

/** The rule of docs/history.md#what-counts and #what-is-kept-and-for-how-long, entry by entry. */
function reference(entries: readonly LoggedEntry[], c: HistoryCheck, atMs: number): number {
  const seen = entries.filter(
    (e) =>
      e.kind === (c.measure === 'denied' ? 'denied' : 'counted') &&
      e.evaluated_at_ms >= atMs - c.window_s * 1000 &&
      e.keep_until_ms >= atMs &&
      c.actions.some((p) => actionPatternMatches(p, e.action)) &&
      Object.entries(c.match).every(([f, v]) => Object.hasOwn(e.match_values, f) && jsonEqual(e.match_values[f], v)),
  );
  if (c.measure !== 'sum') return seen.length;
  return sumDecimals(seen.flatMap((e) => e.confirmed_amount ?? e.amount ?? []));
}

describe('EntryLog', () => {
  it('a value equals the reference over the same entries, for random entries, checks and times', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 80 }),
        fc.array(check, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: -600_000, max: 900_000 }),
        (entries, checks, offset) => {
          const log = EntryLog.of(entries);
          expect(log.length).toBe(entries.length);
          // A random time, and the edges: an entry's keep_until, a window's start at an entry.
          const times = [
            BASE + offset,
            ...entries.slice(0, 3).flatMap((e) => [e.keep_until_ms, e.evaluated_at_ms + checks[0]!.window_s * 1000]),
          ];
          for (const at of times)
            for (const c of checks)
              expect(log.value(c, at), `${JSON.stringify(c)} at ${at - BASE}`).toBe(reference(entries, c, at));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('dropping the entries past their keep_until at T changes no value at T or later; it shrinks and grows again', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 80 }),
        fc.array(entry, { maxLength: 40 }),
        fc.array(check, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: -600_000, max: 900_000 }),
        fc.integer({ min: 0, max: 600_000 }),
        fc.nat(),
        (entries, later, checks, dropAt, after, edge) => {
          const log = EntryLog.of(entries);
          // Half the time T is an entry's keep_until (which still counts at T), and the values are read at T.
          const T =
            entries.length > 0 && edge % 2 === 0 ? entries[edge % entries.length]!.keep_until_ms : BASE + dropAt;
          if (edge % 4 === 0) after = 0;
          const live = entries.filter((e) => e.keep_until_ms >= T);
          expect(log.dropExpired(T)).toBe(live.length !== entries.length);
          expect(log.length).toBe(live.length);
          for (const e of later) log.push(e);
          const all = [...live, ...later];
          expect(log.length).toBe(all.length);
          for (const c of checks) {
            expect(log.value(c, T + after), JSON.stringify(c)).toBe(reference([...entries, ...later], c, T + after));
            expect(log.value(c, T + after)).toBe(reference(all, c, T + after));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('an action no entry has: 0 without reading the entries', () => {
    const log = EntryLog.of([
      {
        action: 'ns.a',
        kind: 'counted',
        amount: '1',
        confirmed_amount: null,
        match_values: {},
        evaluated_at_ms: BASE,
        keep_until_ms: BASE + 3_600_000,
      },
    ]);
    const c: HistoryCheck = {
      scope: 'session',
      key: 's1',
      actions: ['ns.b'],
      window_s: 3600,
      measure: 'count',
      match: {},
    };
    expect(log.value(c, BASE)).toBe(0);
    expect(log.value({ ...c, actions: ['ns.*'] }, BASE)).toBe(1);
    expect(log.value({ ...c, actions: ['ns.*'], measure: 'sum' }, BASE)).toBe(1);
  });

  it('one check read again as the log learns new actions: each read counts the actions its patterns name by then', () => {
    const at = (action: string, kind: 'counted' | 'denied' = 'counted'): LoggedEntry => ({
      action,
      kind,
      amount: null,
      confirmed_amount: null,
      match_values: {},
      evaluated_at_ms: BASE,
      keep_until_ms: BASE + 3_600_000,
    });
    const log = EntryLog.of([at('ns.a')]);
    // The same check object (a probe's actions array) for every read, as the decision path passes it.
    const c: HistoryCheck = {
      scope: 'session',
      key: 's1',
      actions: ['ns.b', 'x.*'],
      window_s: 3600,
      measure: 'count',
      match: {},
    };
    const denied: HistoryCheck = { ...c, measure: 'denied' };
    expect(log.value(c, BASE)).toBe(0);
    log.push(at('ns.b'));
    expect(log.value(c, BASE)).toBe(1);
    log.push(at('ns.c'));
    log.push(at('x.y'));
    expect(log.value(c, BASE)).toBe(2);
    expect(log.value(denied, BASE)).toBe(0);
    log.push(at('ns.b', 'denied'));
    expect([log.value(c, BASE), log.value(denied, BASE)]).toEqual([2, 1]);
    // Dropped and grown again: the actions seen before keep their flags.
    expect(log.dropExpired(BASE + 3_600_001)).toBe(true);
    expect(log.value(c, BASE + 3_600_001)).toBe(0);
    log.push({ ...at('ns.b'), evaluated_at_ms: BASE + 3_600_001, keep_until_ms: BASE + 7_200_000 });
    expect(log.value(c, BASE + 3_600_001)).toBe(1);
  });
});
