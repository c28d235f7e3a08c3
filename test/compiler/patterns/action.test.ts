import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  actionPatternCovers,
  actionPatternMatches,
  actionPatternsOverlap,
  isValidAction,
  isValidActionPattern,
} from '../../../compiler/patterns/action.js';

describe('action strings and patterns', () => {
  it('accepts namespace.verb actions only', () => {
    for (const ok of ['payments.charge', 'a.b', 'ns_1.verb_2']) expect(isValidAction(ok)).toBe(true);
    for (const bad of ['payments', 'Payments.charge', 'payments.*', '*', 'a.b.c', '1a.b', 'a.', '.b', 'a-b.c'])
      expect(isValidAction(bad)).toBe(false);
  });

  it('accepts * alone or as either part in patterns', () => {
    for (const ok of ['*', 'payments.*', '*.read', '*.*', 'payments.charge'])
      expect(isValidActionPattern(ok)).toBe(true);
    for (const bad of ['payments', 'pay*.read', 'payments.re*', '**', 'a.b.c', '*.'])
      expect(isValidActionPattern(bad)).toBe(false);
  });

  it('matches by part', () => {
    expect(actionPatternMatches('payments.*', 'payments.refund')).toBe(true);
    expect(actionPatternMatches('payments.*', 'orders.refund')).toBe(false);
    expect(actionPatternMatches('*.read', 'orders.read')).toBe(true);
    expect(actionPatternMatches('*.read', 'orders.reader')).toBe(false);
    expect(actionPatternMatches('*', 'x.y')).toBe(true);
    expect(actionPatternMatches('orders.read', 'orders.read')).toBe(true);
  });

  const part = fc.constantFrom('a', 'b', '*');
  const pattern = fc.oneof(
    fc.constant('*'),
    fc.tuple(part, part).map(([n, v]) => `${n}.${v}`),
  );
  const actions = ['a', 'b', 'c'].flatMap((n) => ['a', 'b', 'c'].map((v) => `${n}.${v}`));

  it('overlap and cover agree with matching over every action', () => {
    fc.assert(
      fc.property(pattern, pattern, (p, q) => {
        const both = actions.some((a) => actionPatternMatches(p, a) && actionPatternMatches(q, a));
        expect(actionPatternsOverlap(p, q)).toBe(both);
        const covered = actions.every((a) => !actionPatternMatches(q, a) || actionPatternMatches(p, a));
        expect(actionPatternCovers(p, q)).toBe(covered);
      }),
      { numRuns: 500 },
    );
  });
});
