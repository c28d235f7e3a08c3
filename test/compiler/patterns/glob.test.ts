import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compileGlob, globCovers, globMatches, globsIntersect, matchGlob } from '../../../compiler/patterns/glob.js';

/** Reference: the glob as an anchored regex (fine for small inputs). */
function regexMatch(pattern: string, subject: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
  return re.test(subject);
}

const alphabet = fc.constantFrom('a', 'b', '*', ':', '-');
const small = (max: number) => fc.array(alphabet, { maxLength: max }).map((cs) => cs.join(''));
const tiny = fc.array(fc.constantFrom('a', 'b', '*'), { maxLength: 4 }).map((cs) => cs.join(''));
const subjects = fc.array(fc.constantFrom('a', 'b', ':', '-'), { maxLength: 10 }).map((cs) => cs.join(''));

describe('glob matching', () => {
  it('matches exact strings only exactly', () => {
    expect(matchGlob('agent-1', 'agent-1')).toBe(true);
    expect(matchGlob('agent-1', 'agent-10')).toBe(false);
    expect(matchGlob('', '')).toBe(true);
  });

  it('treats * as any run of characters, including none', () => {
    expect(matchGlob('support-*', 'support-')).toBe(true);
    expect(matchGlob('support-*', 'support-eu-1')).toBe(true);
    expect(matchGlob('support-*', 'sales-1')).toBe(false);
    expect(matchGlob('*-bot', 'x-bot')).toBe(true);
    expect(matchGlob('order:*:line:*', 'order:1:line:2')).toBe(true);
    expect(matchGlob('order:*:line:*', 'order:1:item:2')).toBe(false);
    expect(matchGlob('a*a', 'a')).toBe(false);
    expect(matchGlob('ab*ba', 'aba')).toBe(false);
    expect(matchGlob('*', '')).toBe(true);
  });

  it('agrees with an anchored regex on random patterns and subjects', () => {
    fc.assert(
      fc.property(small(8), subjects, (pattern, subject) => {
        expect(globMatches(compileGlob(pattern), subject)).toBe(regexMatch(pattern, subject));
      }),
      { numRuns: 3000 },
    );
  });

  it('stays linear on inputs that make backtracking matchers explode', () => {
    // A backtracking matcher needs ~n^k steps here; the segment scan needs O(n).
    const pattern = `${'*a'.repeat(40)}*b`;
    const subject = 'a'.repeat(200_000);
    const glob = compileGlob(pattern);
    expect(globMatches(glob, subject)).toBe(false);
    expect(globMatches(glob, `${subject}b`)).toBe(true);
    const kmpWorst = compileGlob(`*${'a'.repeat(1000)}b*`);
    expect(globMatches(kmpWorst, 'a'.repeat(100_000))).toBe(false);
  });
});

describe('glob relations used by the lints', () => {
  it('globsIntersect is exact: some string matches both iff it says so', () => {
    fc.assert(
      fc.property(tiny, tiny, (a, b) => {
        const witnessExists = bruteForceIntersect(a, b);
        expect(globsIntersect(a, b)).toBe(witnessExists);
      }),
      { numRuns: 400 },
    );
  });

  it('globCovers never claims coverage that does not hold', () => {
    fc.assert(
      fc.property(small(5), small(5), subjects, (outer, inner, subject) => {
        if (globCovers(outer, inner) && matchGlob(inner, subject)) expect(matchGlob(outer, subject)).toBe(true);
      }),
      { numRuns: 3000 },
    );
    expect(globCovers('support-*', 'support-eu-*')).toBe(true);
    expect(globCovers('*', 'anything*')).toBe(true);
    expect(globCovers('support-eu-*', 'support-*')).toBe(false);
  });
});

/**
 * Reference for globsIntersect: tries every string over {a, b, z} up to the
 * patterns' combined length (a shortest common string is never longer).
 */
function bruteForceIntersect(a: string, b: string): boolean {
  const maxLen = a.length + b.length;
  let frontier = [''];
  for (let len = 0; len <= maxLen; len++) {
    for (const s of frontier) if (regexMatch(a, s) && regexMatch(b, s)) return true;
    frontier = frontier.flatMap((s) => [`${s}a`, `${s}b`, `${s}z`]);
  }
  return false;
}
