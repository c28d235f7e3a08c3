import { describe, expect, it } from 'vitest';
import { isConstantFalse, parseCondition } from '../../../compiler/condition/index.js';

function constantFalse(text: string): boolean {
  const parsed = parseCondition(text);
  expect(parsed.issues, text).toEqual([]);
  return isConstantFalse(parsed.ast!);
}

describe('isConstantFalse', () => {
  it('finds conditions that can never hold', () => {
    for (const text of [
      'false',
      '!true',
      '1 == 2',
      "'a' != 'a'",
      '1 > 2',
      'context.x in []',
      'amount in []',
      'contains([], context.x)',
      "false && context.x == 'y'",
      "context.x == 'y' && false",
      'context.x && (1 == 2 || false)',
      '!(true || context.x)',
      "startsWith('abc', 'b')",
      "matches('abc', 'x*')",
      '1 in [2, 3]',
      'null != null',
      '1 < null',
      '!(context.a || !false)',
    ]) {
      expect(constantFalse(text), text).toBe(true);
    }
  });

  it('is conservative: anything that may hold is not constant false', () => {
    for (const text of [
      'true',
      'context.x',
      'amount < 5',
      'amount < 5 && amount > 10',
      'context.x != context.x',
      'context.x in [1]',
      '!(context.x in [])',
      'false || context.x',
      '1 == 1',
      "contains(context.x, 'a')",
      "startsWith('abc', 'a') && context.y == 1",
      'resource == null',
    ]) {
      expect(constantFalse(text), text).toBe(false);
    }
  });

  it('does not throw on broken ASTs', () => {
    expect(isConstantFalse({ kind: 'nope' } as never)).toBe(false);
  });
});
