/**
 * Matching is linear, measured in steps, not by a timer: globWork counts every
 * character the matcher compares (prefix, suffix, each KMP step and fallback),
 * and on pathological inputs (`*a*a*...*b` against `aaaa...a`, the KMP worst
 * case, random patterns) it stays within 2 x (subject + pattern). The same bound
 * holds through the condition language's matches() and through a whole
 * evaluation, agent and resource globs included; action patterns never reach the
 * glob matcher (a trie of at most four map lookups).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCondition, parseCondition } from '../../../compiler/condition/index.js';
import { compileSources } from '../../../compiler/compile.js';
import { actionPatternMatches } from '../../../compiler/patterns/action.js';
import { compileGlob, globMatches, globWork } from '../../../compiler/patterns/glob.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';
import { evaluate, evaluateLinear } from '../../../compiler/table/evaluate.js';

/** The steps one call takes. */
function steps<T>(f: () => T): { value: T; steps: number } {
  const before = globWork.steps;
  const value = f();
  return { value, steps: globWork.steps - before };
}

const N = 100_000;
const C = 2;

describe('glob matching is linear in steps', () => {
  it('`*a*a*...*b` against 100k `a`s: at most 2 x (n + m) steps, matching or not', () => {
    for (const stars of [1, 10, 100, 1000]) {
      const pattern = `${'*a'.repeat(stars)}*b`;
      const glob = compileGlob(pattern);
      for (const subject of ['a'.repeat(N), `${'a'.repeat(N)}b`, `${'a'.repeat(N / 2)}b${'a'.repeat(N / 2)}`]) {
        const r = steps(() => globMatches(glob, subject));
        expect(r.value).toBe(subject.endsWith('b'));
        expect(r.steps, `${stars} stars, subject ${subject.length}`).toBeLessThanOrEqual(
          C * (subject.length + pattern.length),
        );
        expect(r.steps).toBeGreaterThan(0); // the counter counts
      }
    }
  });

  it('the KMP worst case (`*aaa...ab*` against `aaaa...`) and long literal prefixes and suffixes', () => {
    for (const m of [2, 100, 1000, 10_000]) {
      const pattern = `*${'a'.repeat(m - 1)}b*`;
      const r = steps(() => globMatches(compileGlob(pattern), 'a'.repeat(N)));
      expect(r.value).toBe(false);
      expect(r.steps).toBeLessThanOrEqual(C * (N + pattern.length));
    }
    const affix = `${'x'.repeat(N / 2)}*${'y'.repeat(N / 2)}`;
    const r = steps(() => globMatches(compileGlob(affix), `${'x'.repeat(N / 2)}z${'y'.repeat(N / 2)}`));
    expect(r.value).toBe(true);
    expect(r.steps).toBeLessThanOrEqual(C * (N + 1 + affix.length));
  });

  it('random patterns and subjects (property): steps <= 2 x (n + m)', () => {
    const text = (alphabet: string[], max: number) =>
      fc.array(fc.constantFrom(...alphabet), { maxLength: max }).map((a) => a.join(''));
    fc.assert(
      fc.property(text(['a', 'b', '*', 'aa', 'ab'], 300), text(['a', 'b', 'aab', 'aaaa'], 3000), (pattern, subject) => {
        const r = steps(() => globMatches(compileGlob(pattern), subject));
        expect(r.steps).toBeLessThanOrEqual(C * (subject.length + pattern.length));
      }),
      { numRuns: 400 },
    );
  });
});

describe('matches() in conditions and whole evaluations stay linear', () => {
  const request = (over: Partial<EvaluationInput>): EvaluationInput => ({
    agent_id: 'x',
    action: 'orders.read',
    resource: null,
    amount: null,
    context: null,
    ...over,
  });

  it("matches(context.s, '*a*a*...*b') and matches(context.s, context.g) on a 100k string", () => {
    const pattern = `${'*a'.repeat(500)}*b`;
    const literal = compileCondition(parseCondition(`matches(context.s, '${pattern}')`).ast!);
    const dynamic = compileCondition(parseCondition('matches(context.s, context.g)').ast!);
    for (const s of ['a'.repeat(N), `${'a'.repeat(N)}b`]) {
      const a = steps(() => literal(request({ context: { s } })));
      expect(a.value).toBe(s.endsWith('b'));
      expect(a.steps).toBeLessThanOrEqual(C * (s.length + pattern.length));
      const g = `${'*a'.repeat(5000)}*b`;
      const b = steps(() => dynamic(request({ context: { s, g } })));
      expect(b.value).toBe(s.endsWith('b'));
      expect(b.steps).toBeLessThanOrEqual(C * (s.length + g.length));
    }
  });

  it('an evaluation over pathological agent and resource globs: steps <= 2 x (n + m) per glob; long actions never reach the glob matcher', () => {
    const globs = [`${'*a'.repeat(120)}*b`, `*${'a'.repeat(250)}b*`, 'a*a*a*a*a*a*a*a*c']; // agent globs: at most 256 characters
    const yaml = globs
      .map(
        (g, i) =>
          `- id: pol_g${i}\n  effect: allow\n  actions: ["orders.read", "*.write"]\n  agents: ["${g}"]\n  resources: ["${g}"]\n  condition: "matches(context.s, '${g}')"`,
      )
      .join('\n');
    const compiled = compileSources([{ file: 'g.yaml', text: `policies:\n${yaml}\n` }]);
    expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const table = compiled.table!;
    const s = 'a'.repeat(N);
    const bound = globs.reduce((sum, g) => sum + 3 * C * (s.length + g.length), 0); // agent, resource and condition per policy
    for (const run of [evaluate, evaluateLinear]) {
      const r = steps(() => run(table, request({ agent_id: s, resource: s, context: { s } })));
      expect(r.value.effect).toBe('deny');
      expect(r.steps).toBeLessThanOrEqual(bound);
    }
    // Action patterns: matched by the trie and actionPatternMatches, no glob work at all.
    const longAction = `${'a'.repeat(N)}.${'b'.repeat(N)}`;
    const a = steps(() => evaluate(table, request({ agent_id: 'z', action: longAction })));
    expect(a.value.reason).toBe('policy.not_found');
    expect(a.steps).toBe(0);
    expect(actionPatternMatches('*.write', `${'a'.repeat(N)}.write`)).toBe(true);
    expect(actionPatternMatches('orders.*', `orders.${'b'.repeat(N)}`)).toBe(true);
  });
});
