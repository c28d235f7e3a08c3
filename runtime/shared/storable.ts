/**
 * What valid JSON can carry but the store cannot hold, found without recursion
 * (runtime/http/validation.ts refuses it for every route; a YAML policy body is
 * checked the same way).
 */

/** Where a JSON pointer is, in words: `body.a.b[0]`, `query parameter limit`. */
export function where(part: string | undefined, pointer: string): string {
  const path = pointer
    .split('/')
    .slice(1)
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
  if (part === 'querystring') return path ? `query parameter ${path}` : 'query string';
  if (part === 'params') return path ? `path parameter ${path}` : 'path';
  return path || 'body';
}

/** Deepest nesting of objects and arrays accepted in a body (the store's drivers recurse). */
export const MAX_INPUT_DEPTH = 64;

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function storableString(s: string): boolean {
  return !s.includes('\u0000') && !UNPAIRED_SURROGATE.test(s);
}

/**
 * What valid JSON can carry but the store cannot hold (PostgreSQL text and jsonb
 * reject NUL and unpaired surrogates; 1e400 parses to Infinity, which JSON turns
 * into null; very deep nesting overflows the drivers' recursion): the first such
 * place as a detail, or null. Checked without recursion.
 */
export function unstorableInput(value: unknown, part: string): { path: string; message: string } | null {
  const steps = unstorableInputSteps(value, part);
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** Values looked at between two yields of {@link unstorableInputSteps}. */
const VALUES_PER_STEP = 4096;

/** A value to look at, and where it is (its pointer is only spelled out for a problem). */
interface Place {
  value: unknown;
  parent: Place | null;
  /** A field name, or an array index. */
  key: string | number;
  depth: number;
}

function pointerOf(place: Place): string {
  const keys: string[] = [];
  for (let p: Place | null = place; p && p.parent; p = p.parent)
    keys.push(typeof p.key === 'number' ? String(p.key) : p.key.replace(/~/g, '~0').replace(/\//g, '~1'));
  return keys
    .reverse()
    .map((k) => `/${k}`)
    .join('');
}

/**
 * {@link unstorableInput} in steps of a few thousand values, so a large body (a
 * bundle of 100,000 policies) can be checked in slices between other requests
 * (shared/sliced.ts runSliced).
 *
 * @example
 * const problem = await runSliced(unstorableInputSteps(body, 'body'));
 * if (problem) throw new InvalidFieldError(problem.message, { details: [problem] });
 */
export function* unstorableInputSteps(
  value: unknown,
  part: string,
): Generator<void, { path: string; message: string } | null> {
  const stack: Place[] = [{ value, parent: null, key: '', depth: 0 }];
  let seen = 0;
  while (stack.length > 0) {
    if (++seen % VALUES_PER_STEP === 0) yield;
    const place = stack.pop()!;
    const v = place.value;
    if (typeof v === 'string') {
      if (!storableString(v)) {
        const pointer = pointerOf(place);
        return {
          path: pointer || '/',
          message: `${where(part, pointer)} contains a NUL character or an unpaired surrogate`,
        };
      }
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) {
        const pointer = pointerOf(place);
        return { path: pointer || '/', message: `${where(part, pointer)} must be a finite number` };
      }
    } else if (v !== null && typeof v === 'object') {
      if (place.depth >= MAX_INPUT_DEPTH) {
        const pointer = pointerOf(place);
        return {
          path: pointer || '/',
          message: `${where(part, pointer)} is nested more than ${MAX_INPUT_DEPTH} levels deep`,
        };
      }
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) stack.push({ value: v[i], parent: place, key: i, depth: place.depth + 1 });
      } else {
        for (const [k, x] of Object.entries(v)) {
          const child: Place = { value: x, parent: place, key: k, depth: place.depth + 1 };
          if (!storableString(k)) {
            return {
              path: pointerOf(child),
              message: `a field name in ${where(part, pointerOf(place))} contains a NUL character or an unpaired surrogate`,
            };
          }
          stack.push(child);
        }
      }
    }
  }
  return null;
}
