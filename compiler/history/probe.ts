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

/** The functions, in the order the docs list them. */
export const HISTORY_FUNCTIONS: readonly HistoryFunction[] = ['count', 'sum', 'exists', 'denied'];

/** What the store computes for each function (`exists` is a count above 0). */
export const HISTORY_MEASURES: Readonly<Record<HistoryFunction, HistoryMeasure>> = {
  count: 'count',
  sum: 'sum',
  exists: 'count',
  denied: 'denied',
};

/** The longest window: 90 days. */
export const MAX_HISTORY_WINDOW_SECONDS = 90 * 86_400;

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3_600, d: 86_400 };

/**
 * A duration `<n>s|m|h|d` in seconds (`0s` included), or undefined when the
 * text is not one (no sign, no leading zero, no fraction, no other unit).
 *
 * @example
 * ```ts
 * import { durationSeconds } from 'agent-authz/compiler';
 *
 * console.log(durationSeconds('10m'), durationSeconds('24h'), durationSeconds('0s'), durationSeconds('1.5h'), durationSeconds('1w')); // => 600 86400 0 undefined undefined
 * ```
 */
export function durationSeconds(text: string): number | undefined {
  const m = /^(0|[1-9][0-9]{0,9})([smhd])$/.exec(text);
  return m ? Number(m[1]) * UNIT_SECONDS[m[2]!]! : undefined;
}

/**
 * A history window in seconds: a duration from 1 s to 90 d, else undefined.
 *
 * @example
 * ```ts
 * import { windowSeconds } from 'agent-authz/compiler';
 *
 * console.log(windowSeconds('1h'), windowSeconds('90d'), windowSeconds('91d'), windowSeconds('0s')); // => 3600 7776000 undefined undefined
 * ```
 */
export function windowSeconds(text: string): number | undefined {
  const seconds = durationSeconds(text);
  return seconds !== undefined && seconds >= 1 && seconds <= MAX_HISTORY_WINDOW_SECONDS ? seconds : undefined;
}

/**
 * The probe of a history call whose arguments are valid (the compiler checks
 * them first): actions and match fields sorted and unique, the window in
 * seconds, the key that identifies what the store computes (`count` and
 * `exists` of the same arguments share one).
 *
 * @example
 * ```ts
 * import { historyProbe } from 'agent-authz/compiler';
 *
 * const probe = historyProbe('exists', ['claims.approve'], '1h', 'session', ['resource']);
 * console.log(probe.measure, probe.windowSeconds, probe.key); // => count 3600 count|claims.approve|3600|session|resource
 * ```
 */
export function historyProbe(
  fn: HistoryFunction,
  actions: readonly string[],
  window: string,
  scope: HistoryScope,
  match: readonly string[],
): HistoryProbe {
  const measure = HISTORY_MEASURES[fn];
  const sortedActions = [...new Set(actions)].sort();
  const sortedMatch = [...new Set(match)].sort();
  const seconds = windowSeconds(window);
  if (seconds === undefined) throw new Error(`historyProbe: ${JSON.stringify(window)} is not a window from 1s to 90d`);
  return {
    key: `${measure}|${sortedActions.join(',')}|${seconds}|${scope}|${sortedMatch.join(',')}`,
    fn,
    measure,
    actions: sortedActions,
    window,
    windowSeconds: seconds,
    scope,
    match: sortedMatch,
  };
}

/**
 * The probe as a condition would write it (scope and match shown when they
 * are not the defaults), for `authz explain` and `authz test`.
 *
 * @example
 * ```ts
 * import { historyProbe, probeText } from 'agent-authz/compiler';
 *
 * console.log(probeText(historyProbe('sum', ['shop.buy'], '1d', 'user', []))); // => history.sum('shop.buy', '1d', 'user')
 * ```
 */
export function probeText(probe: Pick<HistoryProbe, 'fn' | 'actions' | 'window' | 'scope' | 'match'>): string {
  const quote = (s: string) => `'${s}'`;
  const actions = probe.actions.length === 1 ? quote(probe.actions[0]!) : `[${probe.actions.map(quote).join(', ')}]`;
  const args = [actions, quote(probe.window)];
  if (probe.scope !== 'session' || probe.match.length > 0) args.push(quote(probe.scope));
  if (probe.match.length > 0) args.push(`[${probe.match.map(quote).join(', ')}]`);
  return `history.${probe.fn}(${args.join(', ')})`;
}
