/**
 * Glob patterns for agent ids and resources: `*` matches any run of characters
 * (including none); every other character matches itself.
 *
 * Matching is linear in the length of the subject plus the pattern: the pattern is
 * split at its stars into literal segments; the first must be a prefix, the last a
 * suffix, and the middle ones are found left to right (leftmost match is always
 * safe for star-only globs) with a Knuth-Morris-Pratt scan, so no input can make
 * matching backtrack.
 */
export interface CompiledGlob {
  readonly source: string;
  /** No star: the subject must equal this. */
  readonly exact: string | undefined;
  readonly prefix: string;
  readonly suffix: string;
  readonly middles: readonly Segment[];
  /** Shortest subject that can match. */
  readonly minLength: number;
}

interface Segment {
  readonly text: string;
  readonly fail: Int32Array;
}

export function compileGlob(pattern: string): CompiledGlob {
  if (!pattern.includes('*')) {
    return { source: pattern, exact: pattern, prefix: pattern, suffix: '', middles: [], minLength: pattern.length };
  }
  // Every compiled glob has the same shape (`exact` present, maybe undefined): one hidden class on the hot path.
  const parts = pattern.split('*');
  const prefix = parts[0]!;
  const suffix = parts[parts.length - 1]!;
  const middles = parts
    .slice(1, -1)
    .filter((p) => p.length > 0)
    .map((text) => ({ text, fail: failureTable(text) }));
  const minLength = prefix.length + suffix.length + middles.reduce((n, m) => n + m.text.length, 0);
  return { source: pattern, exact: undefined, prefix, suffix, middles, minLength };
}

/**
 * Work done by the matcher, for tests that bound it (linear time, measured in
 * steps rather than by a timer): characters compared for the prefix and suffix
 * plus every step of the segment scans. Nothing in production reads it.
 */
export const globWork = { steps: 0 };

export function globMatches(glob: CompiledGlob, subject: string): boolean {
  if (glob.exact !== undefined) return subject === glob.exact;
  if (subject.length < glob.minLength) return false;
  globWork.steps += glob.prefix.length + glob.suffix.length;
  if (!subject.startsWith(glob.prefix) || !subject.endsWith(glob.suffix)) return false;
  let from = glob.prefix.length;
  const end = subject.length - glob.suffix.length;
  for (const segment of glob.middles) {
    const at = kmpIndexOf(subject, segment, from, end);
    if (at < 0) return false;
    from = at + segment.text.length;
  }
  return true;
}

/**
 * Whether `subject` matches the glob `pattern` (agent ids, resources): `*`
 * matches any run of characters, none included; every other character matches
 * itself. Linear time in the lengths of both, whatever the input. For one-off
 * matches (the pattern is compiled on each call).
 *
 * @param pattern - the glob, e.g. `support-*` or `order:*`.
 * @param subject - the string to test.
 * @returns true when the whole subject matches.
 *
 * @example
 * ```ts
 * import { matchGlob } from 'agent-authz/compiler';
 *
 * console.log(matchGlob('support-*', 'support-tier2-7'), matchGlob('order:*', 'customer:9')); // => true false
 * ```
 */
export function matchGlob(pattern: string, subject: string): boolean {
  return globMatches(compileGlob(pattern), subject);
}

export function isWildcardOnly(pattern: string): boolean {
  return pattern.length > 0 && /^\*+$/.test(pattern);
}

function failureTable(text: string): Int32Array {
  const fail = new Int32Array(text.length);
  let k = 0;
  for (let i = 1; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== text.charCodeAt(k)) k = fail[k - 1]!;
    if (text.charCodeAt(i) === text.charCodeAt(k)) k++;
    fail[i] = k;
  }
  return fail;
}

/** First index >= from where the segment occurs wholly before `end`, or -1. */
function kmpIndexOf(subject: string, segment: Segment, from: number, end: number): number {
  const { text, fail } = segment;
  let k = 0;
  let fallbacks = 0;
  for (let i = from; i < end; i++) {
    const c = subject.charCodeAt(i);
    while (k > 0 && c !== text.charCodeAt(k)) {
      k = fail[k - 1]!;
      fallbacks++;
    }
    if (c === text.charCodeAt(k)) k++;
    if (k === text.length) {
      globWork.steps += i - from + 1 + fallbacks;
      return i - text.length + 1;
    }
  }
  globWork.steps += end - from + fallbacks;
  return -1;
}

/**
 * Whether some string matches both globs (exact: a walk over the product of the
 * two patterns' positions, O(|a| * |b|)).
 */
export function globsIntersect(a: string, b: string): boolean {
  const seen = new Set<number>();
  const width = b.length + 1;
  const stack: Array<[number, number]> = [[0, 0]];
  while (stack.length > 0) {
    const [i, j] = stack.pop()!;
    const key = i * width + j;
    if (seen.has(key)) continue;
    seen.add(key);
    if (i === a.length && j === b.length) return true;
    const ca = a[i];
    const cb = b[j];
    if (ca === '*') stack.push([i + 1, j]);
    if (cb === '*') stack.push([i, j + 1]);
    if (ca !== undefined && cb !== undefined) {
      if (ca === '*' && cb === '*') stack.push([i + 1, j + 1]);
      else if (ca === '*') stack.push([i, j + 1]);
      else if (cb === '*') stack.push([i + 1, j]);
      else if (ca === cb) stack.push([i + 1, j + 1]);
    }
  }
  return false;
}

/**
 * Whether every string matching `inner` also matches `outer`. Conservative: it
 * answers true only when that is certain (equal patterns, `outer` all stars, a
 * star-free `inner` that `outer` matches, or `outer` of the form `pre*suf` with
 * `inner` starting with `pre` and ending with `suf` without overlap).
 */
export function globCovers(outer: string, inner: string): boolean {
  if (outer === inner || isWildcardOnly(outer)) return true;
  if (!inner.includes('*')) return matchGlob(outer, inner);
  const stars = outer.split('*').length - 1;
  if (stars !== 1) return false;
  const [pre, suf] = outer.split('*') as [string, string];
  const innerPre = inner.slice(0, inner.indexOf('*'));
  const innerSuf = inner.slice(inner.lastIndexOf('*') + 1);
  return innerPre.startsWith(pre) && innerSuf.endsWith(suf);
}
