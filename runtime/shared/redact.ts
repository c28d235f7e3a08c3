/**
 * Context paths never stored (AUTHZ_REDACT_CONTEXT): a decision's context is
 * evaluated whole, then stored, answered and sent in events without them.
 */

/** A path such as `card_number` or `customer.ssn` (a leading `context.` is allowed and dropped). */
export type RedactionPath = readonly string[];

/**
 * Parses `context.card_number, customer.ssn` into paths.
 *
 * @throws Error naming the bad entry (empty segments).
 * @example
 * parseRedactionPaths('context.card_number, customer.ssn'); // [['card_number'], ['customer', 'ssn']]
 */
export function parseRedactionPaths(list: string): RedactionPath[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((entry) => {
      const segments = entry.split('.');
      if (segments[0] === 'context') segments.shift();
      if (segments.length === 0 || segments.some((s) => s === ''))
        throw new Error(`"${entry}" is not a context path (segments separated by dots, e.g. context.card_number)`);
      return segments;
    });
}

/**
 * A copy of `context` without the given paths (only the objects on a path are
 * copied; everything else is shared). Arrays on a path are left as they are.
 *
 * @example
 * redactContext({ card_number: '4242', amount: 5 }, [['card_number']]); // { amount: 5 }
 */
export function redactContext(
  context: Record<string, unknown> | null,
  paths: readonly RedactionPath[],
): Record<string, unknown> | null {
  if (context === null || paths.length === 0) return context;
  let out = context;
  for (const path of paths) out = without(out, path, 0) as Record<string, unknown>;
  return out;
}

function without(value: unknown, path: RedactionPath, depth: number): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  const key = path[depth]!;
  if (!Object.hasOwn(record, key)) return value;
  const copy = { ...record };
  if (depth === path.length - 1) delete copy[key];
  else copy[key] = without(record[key], path, depth + 1);
  return copy;
}
