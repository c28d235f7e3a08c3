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
  const stack: Array<[unknown, string, number]> = [[value, '', 0]];
  while (stack.length > 0) {
    const [v, pointer, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (!storableString(v)) return { path: pointer || '/', message: `${where(part, pointer)} contains a NUL character or an unpaired surrogate` };
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { path: pointer || '/', message: `${where(part, pointer)} must be a finite number` };
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_INPUT_DEPTH) return { path: pointer || '/', message: `${where(part, pointer)} is nested more than ${MAX_INPUT_DEPTH} levels deep` };
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) stack.push([v[i], `${pointer}/${i}`, depth + 1]);
      } else {
        for (const [k, x] of Object.entries(v)) {
          const child = `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
          if (!storableString(k)) return { path: child, message: `a field name in ${where(part, pointer)} contains a NUL character or an unpaired surrogate` };
          stack.push([x, child, depth + 1]);
        }
      }
    }
  }
  return null;
}

