/**
 * History probes: the reads of earlier decisions a policy's condition makes
 * (`history.count|sum|exists|denied(ACTIONS, WINDOW[, SCOPE[, MATCH]])`,
 * docs/policies.md#history-in-conditions). Every argument is a literal, so the
 * compiler knows each probe; the runtime computes their values (the compiler
 * never reads a store) and hands them to evaluation through the request's
 * `history` provider.
 *
 * This module is the interface between the compiler's half (the language,
 * probe extraction, evaluation with given values) and the runtime's half (the
 * store keeping the history, exact across processes).
 */

/** The function as written in the condition. */
export type HistoryFunction = 'count' | 'sum' | 'exists' | 'denied';
/** What the store computes for a probe: `exists` reads a count. */
export type HistoryMeasure = 'count' | 'sum' | 'denied';
/** Whose earlier decisions count (default `session`). */
export type HistoryScope = 'session' | 'agent' | 'user' | 'environment';
export const HISTORY_SCOPES: readonly HistoryScope[] = ['session', 'agent', 'user', 'environment'];

/** One history read, known at compile time. Plain JSON (carried in bundles). */
export interface HistoryProbe {
  /** Canonical identity of the probe (same measure, actions, window, scope and match: same key). */
  readonly key: string;
  readonly fn: HistoryFunction;
  readonly measure: HistoryMeasure;
  /** Action patterns (the policies' action grammar), sorted and unique. */
  readonly actions: readonly string[];
  /** As written: `<n>s|m|h|d`. */
  readonly window: string;
  /** The window in seconds (1 s to 90 d). */
  readonly windowSeconds: number;
  readonly scope: HistoryScope;
  /** Fields equal between the earlier decision and this request: `resource`, `context.<path>`. */
  readonly match: readonly string[];
}

/**
 * The value of a probe for the request being decided: a count (`count`,
 * `exists`, `denied`) or a sum (`sum`); null when unknown (the comparisons that
 * read it are false).
 */
export type HistoryValues = (probe: HistoryProbe) => number | null;
