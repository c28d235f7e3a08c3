/**
 * npm's `engines.node` ranges, as far as the dependency tree uses them:
 * alternatives joined by `||`, each a set of comparators (all must hold) such
 * as `>=20.19`, `>= 12.*`, `^20.19.0`, `~1.2`, `18`, `10.x`, `*`. No new
 * dependency (the `semver` package is only a transitive one here). Anything
 * else throws, so a new kind of range is noticed rather than misread.
 *
 * @example
 * admits('^20.19.0 || >=22.12.0', '20.19.0') // => true
 * admits('>=22', '20.19.0')                  // => false
 */

type Version = [number, number, number];

/** [lowest admitted (inclusive), highest (exclusive) or null]: one comparator as an interval. */
type Interval = { min: Version; minInclusive: boolean; max: Version | null; maxInclusive: boolean };

const cmp = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** `20.19.0` -> [20, 19, 0]. */
export function parseVersion(text: string): Version {
  const m = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`not a version: ${JSON.stringify(text)}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** A partial version: `20`, `20.19`, `10.x`, `12.*`, `20.19.0` -> its known parts. */
function partial(text: string): number[] {
  const m = /^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?$/.exec(text);
  if (!m) throw new Error(`not a version in a range: ${JSON.stringify(text)}`);
  const parts: number[] = [];
  for (const p of m.slice(1)) {
    if (p === undefined || /^[xX*]$/.test(p)) break;
    parts.push(Number(p));
  }
  return parts;
}

const pad = (parts: number[]): Version => [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0];

/** The first version past everything `parts` matches: 20 -> 21.0.0, 20.19 -> 20.20.0. */
function bump(parts: number[], at: number): Version {
  const v = pad(parts);
  v[at] += 1;
  for (let i = at + 1; i < 3; i++) v[i] = 0;
  return v;
}

function comparator(token: string): Interval {
  const m = /^(>=|<=|>|<|=|\^|~)?(.+)$/.exec(token)!;
  const op = m[1] ?? '';
  const parts = partial(m[2]!);
  const all: Interval = { min: [0, 0, 0], minInclusive: true, max: null, maxInclusive: false };
  if (parts.length === 0) return op === '<' || op === '>' ? { ...all, max: [0, 0, 0] } : all;
  const v = pad(parts);
  // The range of a partial version: 20 is 20.0.0 up to 21.0.0.
  const upper = parts.length < 3 ? bump(parts, parts.length - 1) : null;
  switch (op) {
    case '>=':
      return { ...all, min: v };
    case '>':
      return upper ? { ...all, min: upper } : { ...all, min: v, minInclusive: false };
    case '<':
      return { ...all, max: v };
    case '<=':
      return upper ? { ...all, max: upper } : { ...all, max: v, maxInclusive: true };
    case '^': {
      const first = v.findIndex((x, i) => x !== 0 || i === parts.length - 1);
      return { ...all, min: v, max: bump(parts, Math.max(0, Math.min(first, 2))) };
    }
    case '~':
      return { ...all, min: v, max: bump(parts, Math.min(1, parts.length - 1)) };
    default:
      return upper ? { ...all, min: v, max: upper } : { ...all, min: v, max: v, maxInclusive: true };
  }
}

function inside(version: Version, i: Interval): boolean {
  const low = cmp(version, i.min);
  if (low < 0 || (low === 0 && !i.minInclusive)) return false;
  if (i.max === null) return true;
  const high = cmp(version, i.max);
  return high < 0 || (high === 0 && i.maxInclusive);
}

/** Whether `range` admits `version` (a full x.y.z). */
export function admits(range: string, version: string): boolean {
  const v = parseVersion(version);
  return range.split('||').some((alternative) => {
    const tokens = alternative
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .filter(Boolean);
    if (tokens.some((t) => t === '-')) throw new Error(`hyphen ranges are not read: ${JSON.stringify(range)}`);
    return tokens.length === 0 || tokens.every((t) => inside(v, comparator(t)));
  });
}

/** The lowest version a `>=x.y[.z]` range admits: `>=20.19` -> `20.19.0`. */
export function lowestAdmitted(range: string): string {
  const m = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(range.trim());
  if (!m) throw new Error(`expected a ">=x.y" range, not ${JSON.stringify(range)}`);
  return pad(partial(m[1]!)).join('.');
}
