/**
 * Action strings (`namespace.verb`) and action patterns (`*` alone or as either part).
 */
export const ACTION_RE = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;
const PART = '(\\*|[a-z][a-z0-9_]*)';
export const ACTION_PATTERN_RE = new RegExp(`^(\\*|${PART}\\.${PART})$`);

/**
 * Whether `action` is an action string, `namespace.verb`: each part a lower-case
 * letter then lower-case letters, digits or `_`. (Patterns with `*` are not actions.)
 *
 * @param action - the string to test.
 * @returns true when it is an action.
 *
 * @example
 * ```ts
 * import { isValidAction } from 'agent-authz/compiler';
 *
 * console.log(isValidAction('payments.refund'), isValidAction('Payments.Refund'), isValidAction('payments.*')); // => true false false
 * ```
 */
export function isValidAction(action: string): boolean {
  return ACTION_RE.test(action);
}

export function isValidActionPattern(pattern: string): boolean {
  return ACTION_PATTERN_RE.test(pattern);
}

/** The two parts of a pattern; `*` alone is `*.*`. */
export function actionPatternParts(pattern: string): [string, string] {
  if (pattern === '*') return ['*', '*'];
  const dot = pattern.indexOf('.');
  return [pattern.slice(0, dot), pattern.slice(dot + 1)];
}

/**
 * Whether a policy's action pattern (`*`, `ns.*`, `*.verb`, `ns.verb`) matches a concrete action.
 *
 * @param pattern - a valid action pattern (isValidActionPattern).
 * @param action - a request's action.
 *
 * @example
 * ```ts
 * import { actionPatternMatches } from 'agent-authz/compiler';
 *
 * console.log(actionPatternMatches('payments.*', 'payments.refund'), actionPatternMatches('*.read', 'orders.write')); // => true false
 * ```
 */
export function actionPatternMatches(pattern: string, action: string): boolean {
  if (pattern === '*') return true;
  const [ns, verb] = actionPatternParts(pattern);
  const dot = action.indexOf('.');
  if (dot < 0) return false;
  return (ns === '*' || ns === action.slice(0, dot)) && (verb === '*' || verb === action.slice(dot + 1));
}

/** Whether some action matches both patterns. */
export function actionPatternsOverlap(a: string, b: string): boolean {
  const [an, av] = actionPatternParts(a);
  const [bn, bv] = actionPatternParts(b);
  return (an === '*' || bn === '*' || an === bn) && (av === '*' || bv === '*' || av === bv);
}

/** Whether every action matching `inner` matches `outer`. */
export function actionPatternCovers(outer: string, inner: string): boolean {
  if (outer === '*' || outer === inner) return true;
  if (inner === '*') return outer === '*.*';
  const od = outer.indexOf('.');
  const id = inner.indexOf('.');
  const on = outer.slice(0, od);
  const ov = outer.slice(od + 1);
  return (on === '*' || on === inner.slice(0, id)) && (ov === '*' || ov === inner.slice(id + 1));
}
