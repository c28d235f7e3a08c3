import { describe, expect, it } from 'vitest';
import { checkCondition, parseCondition, type ConditionAst } from '../../../compiler/condition/index.js';

function issuesOf(text: string) {
  const parsed = parseCondition(text);
  expect(parsed.issues).toEqual([]);
  return checkCondition(parsed.ast!);
}

describe('checkCondition', () => {
  it('accepts well-typed conditions', () => {
    for (const ok of [
      "amount <= 50 && context.channel == 'chat'",
      'amount == null',
      'resource != null',
      "resource == 'doc:1'",
      "agent_id < 'm'",
      'context.n < 5',
      "context.n < 'x'",
      'context.a == context.b',
      'context.is_vip',
      '!context.is_vip',
      'context.a && context.b || !context.c',
      'true',
      '!(1 == 2)',
      "action in ['payments.charge', 'payments.refund']",
      'amount in [1, 2, null, context.limit]',
      'context.tier in context.tiers',
      '[1, 2] == context.list',
      "startsWith(resource, 'doc:') && endsWith(agent_id, '-bot')",
      'startsWith(context.path, context.prefix)',
      "contains(resource, 'x')",
      "contains(context.tags, 'vip')",
      "contains(['a', 'b'], action)",
      'contains(context.values, 3)',
      "matches(agent_id, 'support-*')",
      'matches(resource, context.pattern)',
      '(amount > 5) == context.flag',
      'null == null',
    ]) {
      expect(issuesOf(ok), ok).toEqual([]);
    }
  });

  const errors: Array<[string, number, RegExp]> = [
    [
      "amount < 'x'",
      7,
      /'<' needs two numbers or two strings, but amount is a number \(or missing\) and 'x' is a string/,
    ],
    ['agent_id > 5', 9, /'>' needs two numbers or two strings/],
    ['amount < null', 9, /null is null/],
    ['context.x < null', 12, /'<' needs two numbers or two strings, but null is null/],
    ['context.x >= true', 13, /true is a boolean/],
    ['[1] < context.x', 0, /\[1\] is a list/],
    ["amount == 'x'", 7, /can never be equal: amount is a number \(or missing\) and 'x' is a string/],
    ['agent_id != 5', 9, /can never be equal/],
    ['agent_id == null', 9, /can never be equal/],
    ['true == 1', 5, /can never be equal/],
    ["startsWith(amount, 'a')", 11, /startsWith needs a string as its first argument, but amount is a number/],
    ['endsWith(resource, 5)', 19, /endsWith needs a string as its second argument, but 5 is a number/],
    ['matches(agent_id, null)', 18, /matches needs a string \(a glob\) as its second argument/],
    ['contains(amount, 1)', 9, /contains needs a string or a list as its first argument/],
    ['contains(resource, 1)', 19, /contains needs a string \(the first is a string\)/],
    ["contains([1], 'a')", 10, /list element 1 is a number, which can never equal 'a'/],
    ['1 && true', 0, /'&&' needs booleans, but 1 is a number/],
    ["context.a || 'yes'", 13, /'\|\|' needs booleans, but 'yes' is a string/],
    ['!5', 1, /'!' needs a boolean, but 5 is a number/],
    ['!amount', 1, /'!' needs a boolean/],
    ['amount', 0, /a condition must be true or false, but amount is a number \(or missing\)/],
    ["'yes'", 0, /must be true or false/],
    ['null', 0, /must be true or false/],
    ['[true]', 0, /must be true or false, but \[true\] is a list/],
    ["'sub' in 'string'", 9, /'in' needs a list on its right, but 'string' is a string \(use contains/],
    ['amount in 5', 10, /'in' needs a list/],
    ["amount in [1, 'x', 2]", 14, /list element 'x' is a string, which can never equal amount/],
    ['agent_id in [null]', 13, /list element null is null/],
  ];
  for (const [text, offset, message] of errors) {
    it(`rejects ${text}`, () => {
      const issues = issuesOf(text);
      expect(issues.length, JSON.stringify(issues)).toBe(1);
      expect(issues[0]!.code).toBe('condition.type');
      expect(issues[0]!.message).toMatch(message);
      expect(issues[0]!.offset).toBe(offset);
      expect(issues[0]!.col).toBe(offset + 1);
    });
  }

  it('reports every type error with its own position', () => {
    const issues = issuesOf("amount < 'x' &&\n  startsWith(amount, 'a')");
    expect(issues.map((i) => [i.line, i.col])).toEqual([
      [1, 8],
      [2, 14],
    ]);
  });

  it('re-validates hand-built or stored ASTs', () => {
    const pos = { offset: 0, line: 1, col: 1 };
    const bad = (node: unknown) => checkCondition(node as ConditionAst).map((i) => i.code);
    expect(bad({ kind: 'path', root: 'foo', segments: [], pos })).toContain('condition.unknown_name');
    expect(bad({ kind: 'path', root: 'context', segments: ['__proto__'], pos })).toContain('condition.unknown_name');
    expect(bad({ kind: 'path', root: 'context', segments: ['a b'], pos })).toContain('condition.unknown_name');
    expect(bad({ kind: 'call', fn: 'eval', args: [], pos })).toEqual(['condition.unknown_function']);
    expect(bad({ kind: 'call', fn: 'contains', args: [{ kind: 'literal', value: 'a', pos }], pos })).toEqual([
      'condition.arity',
    ]);
    expect(bad({ kind: 'weird', pos })).toEqual(['condition.type']);
    expect(bad({ kind: 'literal', value: { x: 1 }, pos })).toContain('condition.type');
    expect(bad({ kind: 'and', operands: [{ kind: 'literal', value: true, pos }], pos })).toEqual(['condition.type']);
    let deep: unknown = { kind: 'literal', value: true, pos };
    for (let i = 0; i < 100_000; i++) deep = { kind: 'not', operand: deep, pos };
    expect(bad(deep)).toEqual(['condition.too_deep']);
  });
});
