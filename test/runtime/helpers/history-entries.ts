/**
 * Random history entries and checks (fast-check) that the history memory tests
 * share: the store's property test (history-leases-store.test.ts, entries
 * inserted with SQL, read back by takeLease and authz_history_value) and the
 * memory's own (history-entry-log.test.ts, an EntryLog against a reference).
 * Action names, amounts, MATCH values, times and keep-untils are drawn from
 * small sets so that windows, edges and matches meet often.
 */
import fc from 'fast-check';
import type { LoggedEntry } from '../../../runtime/history/entry-log.js';
import type { HistoryCheck } from '../../../runtime/store/history.js';

export const BASE = Date.parse('2026-11-21T10:00:00.000Z');
export const SCOPES = ['session', 'agent', 'user', 'environment'] as const;
export type Scope = (typeof SCOPES)[number];

export const AMOUNTS = ['0.1', '0.2', '0.3', '1', '-0.5', '2.25', '1e-7', '1000.001', '0', '7.10'];
export const VALUES: unknown[] = [
  'a',
  'b',
  '',
  1,
  1.5,
  0,
  true,
  false,
  null,
  { x: 1 },
  { x: 1, y: [1, 2] },
  [1, 2],
  ['a'],
  [],
];

export interface Entry {
  session: string | null;
  agent: string;
  user: string | null;
  scopes: number;
  action: string;
  kind: 'counted' | 'denied';
  amount: string | null;
  confirmed: string | null;
  match: Record<string, unknown>;
  /** ms after BASE. */
  at: number;
  /** ms its keep_until is after its evaluated_at. */
  keep: number;
}

export const matchValues = fc.dictionary(fc.constantFrom('f', 'g'), fc.constantFrom(...VALUES), { maxKeys: 2 });
export const entry = fc.record<Entry>({
  session: fc.constantFrom('s1', 's2', null),
  agent: fc.constantFrom('a1', 'a2'),
  user: fc.constantFrom('u1', 'u2', null),
  scopes: fc.oneof({ weight: 2, arbitrary: fc.constant(15) }, fc.integer({ min: 0, max: 15 })),
  action: fc.constantFrom('ns.a', 'ns.b', 'mx.a', 'mx.c', 'other.go'),
  kind: fc.constantFrom('counted', 'counted', 'denied'),
  amount: fc.option(fc.constantFrom(...AMOUNTS), { nil: null }),
  confirmed: fc.option(fc.constantFrom(...AMOUNTS), { nil: null, freq: 3 }),
  match: matchValues,
  at: fc.oneof(fc.integer({ min: -3_600_000, max: 60_000 }), fc.constantFrom(-3_600_000, -600_000, -60_000, 0)),
  keep: fc.oneof(
    { weight: 2, arbitrary: fc.constant(86_400_000) },
    fc.integer({ min: 0, max: 7_200_000 }),
    fc.constantFrom(0, 600_000, 3_600_000),
  ),
});

export interface Check {
  scope: Scope;
  key: number;
  actions: string[];
  window_s: number;
  measure: HistoryCheck['measure'];
  match: Record<string, unknown>;
}

export const check = fc.record<Check>({
  scope: fc.constantFrom(...SCOPES),
  key: fc.nat(1),
  actions: fc.uniqueArray(fc.constantFrom('ns.a', 'ns.b', 'mx.c', 'ns.*', '*.a', '*'), { minLength: 1, maxLength: 2 }),
  window_s: fc.constantFrom(60, 600, 3600, 86400),
  measure: fc.constantFrom('count', 'sum', 'sum', 'denied'),
  // Most checks without MATCH, so that many entries count.
  match: fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 2, arbitrary: matchValues }),
});

/** What an entry holds of `e` in memory (the fields every scope's copy shares). */
export const loggedEntry = (e: Entry): LoggedEntry => ({
  action: e.action,
  kind: e.kind,
  amount: e.amount,
  confirmed_amount: e.confirmed,
  match_values: e.match,
  evaluated_at_ms: BASE + e.at,
  keep_until_ms: BASE + e.at + e.keep,
});
