import { describe, expect, it } from 'vitest';
import {
  conditionPaths,
  MAX_DEPTH,
  MAX_LENGTH,
  parseCondition,
  printCondition,
  type ConditionAst,
} from '../../../compiler/condition/index.js';

function ast(text: string): ConditionAst {
  const result = parseCondition(text);
  expect(result.issues).toEqual([]);
  expect(result.ast).toBeDefined();
  return result.ast!;
}

function only(text: string) {
  const result = parseCondition(text);
  expect(result.ast).toBeUndefined();
  expect(result.issues.length).toBeGreaterThan(0);
  return result.issues[0]!;
}

describe('parseCondition: structure', () => {
  it('builds the AST with positions', () => {
    const a = ast("amount <= 50 && context.channel == 'chat'");
    expect(a).toEqual({
      kind: 'and',
      pos: { offset: 0, line: 1, col: 1 },
      operands: [
        {
          kind: 'compare',
          op: '<=',
          left: { kind: 'path', root: 'amount', segments: [], pos: { offset: 0, line: 1, col: 1 } },
          right: { kind: 'literal', value: 50, pos: { offset: 10, line: 1, col: 11 } },
          pos: { offset: 0, line: 1, col: 1 },
          opPos: { offset: 7, line: 1, col: 8 },
        },
        {
          kind: 'compare',
          op: '==',
          left: { kind: 'path', root: 'context', segments: ['channel'], pos: { offset: 16, line: 1, col: 17 } },
          right: { kind: 'literal', value: 'chat', pos: { offset: 35, line: 1, col: 36 } },
          pos: { offset: 16, line: 1, col: 17 },
          opPos: { offset: 32, line: 1, col: 33 },
        },
      ],
    });
    // Plain data: survives a JSON round trip unchanged.
    expect(JSON.parse(JSON.stringify(a))).toEqual(a);
  });

  it('gives || lower precedence than &&, and ! binds a whole comparison', () => {
    expect(printCondition(ast('context.a || amount > 1 && amount < 5'))).toBe('context.a || amount > 1 && amount < 5');
    const or = ast('context.a || context.b && context.c');
    expect(or.kind).toBe('or');
    expect(or.kind === 'or' && or.operands[1]!.kind).toBe('and');
    const not = ast('!amount == 5');
    expect(not.kind).toBe('not');
    expect(not.kind === 'not' && not.operand.kind).toBe('compare');
    expect(ast('!!context.x')).toMatchObject({ kind: 'not', operand: { kind: 'not', operand: { kind: 'path' } } });
  });

  it('keeps chains flat and explicit grouping nested', () => {
    expect(ast('context.a && context.b && context.c')).toMatchObject({ kind: 'and', operands: [{}, {}, {}] });
    expect(ast('context.a && (context.b && context.c)')).toMatchObject({
      kind: 'and',
      operands: [{ kind: 'path' }, { kind: 'and' }],
    });
  });

  it('reads literals: numbers, both quote styles, escapes, keywords, lists', () => {
    const lit = (text: string) => {
      const a = ast(`context.x == ${text}`);
      return a.kind === 'compare' && a.right.kind === 'literal' ? a.right.value : undefined;
    };
    expect(lit('12')).toBe(12);
    expect(lit('12.5')).toBe(12.5);
    expect(lit('-3')).toBe(-3);
    expect(lit('-0')).toBe(0);
    expect(Object.is(lit('-0'), -0)).toBe(false);
    expect(lit('1e3')).toBe(1000);
    expect(lit("'it\\'s'")).toBe("it's");
    expect(lit('"say \\"hi\\""')).toBe('say "hi"');
    expect(lit("'a\\\\b\\n\\t'")).toBe('a\\b\n\t');
    expect(lit('"single \' inside"')).toBe("single ' inside");
    expect(lit('true')).toBe(true);
    expect(lit('false')).toBe(false);
    expect(lit('null')).toBe(null);
    const list = ast("context.x in [1, 'a', amount, context.y.z, null]");
    expect(list).toMatchObject({
      kind: 'compare',
      op: 'in',
      right: {
        kind: 'list',
        items: [{ value: 1 }, { value: 'a' }, { root: 'amount' }, { segments: ['y', 'z'] }, { value: null }],
      },
    });
    expect(ast('context.x in []')).toMatchObject({ right: { kind: 'list', items: [] } });
  });

  it('accepts keywords as field names and identifiers that start with keywords', () => {
    expect(ast('context.in.true.null == 1')).toMatchObject({ left: { segments: ['in', 'true', 'null'] } });
    expect(ast('context.inbound == context.nullable')).toMatchObject({
      left: { segments: ['inbound'] },
      right: { segments: ['nullable'] },
    });
  });

  it('parses calls with their arguments', () => {
    expect(ast("startsWith(resource, 'doc:') && matches(agent_id, 'bot-*')")).toMatchObject({
      kind: 'and',
      operands: [
        { kind: 'call', fn: 'startsWith', args: [{ root: 'resource' }, { value: 'doc:' }] },
        { kind: 'call', fn: 'matches', pos: { offset: 32 } },
      ],
    });
  });

  it('tracks lines and columns across line breaks', () => {
    const a = ast("amount > 1\n  && context.x == 'y'");
    expect(a.kind === 'and' && a.operands[1]!.pos).toEqual({ offset: 16, line: 2, col: 6 });
    const b = ast('amount > 1\r\n&& true');
    expect(b.kind === 'and' && b.operands[1]!.pos).toEqual({ offset: 15, line: 2, col: 4 });
  });
});

describe('parseCondition: syntax errors', () => {
  const cases: Array<[string, number, RegExp]> = [
    ['amount <= 50 &&', 15, /^expected an operand after '&&' but found end of condition$/],
    ['', 0, /^expected a condition but found end of condition$/],
    ['amount <', 8, /expected an operand after '<'/],
    ['!', 1, /expected an operand after '!'/],
    ['a < b < c', 6, /comparisons cannot be chained/],
    ['(amount < 1 < 2)', 12, /comparisons cannot be chained/],
    ['amount == 1 == 2', 12, /comparisons cannot be chained/],
    ['(amount > 1', 11, /expected '\)' after '1' but found end of condition/],
    ['amount > 1)', 10, /'\)' without a matching '\('/],
    ['amount 5', 7, /expected an operator or end of condition after 'amount' but found '5'/],
    ['[1,]', 3, /expected a list element .* after ',' but found '\]'/],
    ['context.x in [1 2]', 16, /expected ',' or '\]' after '1' but found '2'/],
    ["context.x in [startsWith(a, 'b')]", 24, /expected ',' or '\]'/],
    ['startsWith(resource', 19, /expected ',' or '\)' after 'resource' but found end of condition/],
    ['startsWith(', 11, /expected an argument or '\)'/],
    ['context.', 8, /expected a field name after '.' but found end of condition/],
    ['context.1', 8, /expected a field name after '.' but found '1'/],
    ['amount = 5', 7, /unexpected '=' \(use '==' to compare\)/],
    ['context.a & context.b', 10, /use '&&'/],
    ['context.a | context.b', 10, /use '\|\|'/],
    ["context.x == 'abc", 13, /unterminated string/],
    ['amount > - 5', 9, /minus sign/],
    ['amount > 5 # comment', 11, /unexpected character '#'/],
    ["context.x == 'a\\qb'", 15, /unknown escape '\\q'/],
    ['amount > 1e999', 9, /too large/],
    ['amount > 1 &&\n  && true', 16, /expected an operand after '&&' but found '&&'/],
  ];
  for (const [text, offset, message] of cases) {
    it(`reports ${JSON.stringify(text)} at offset ${offset}`, () => {
      const issue = only(text);
      expect(issue.code).toBe('condition.syntax');
      expect(issue.message).toMatch(message);
      expect(issue.offset).toBe(offset);
    });
  }

  it('gives line and column of an error on a later line', () => {
    const issue = only('amount > 1 &&\n  && true');
    expect(issue).toMatchObject({ line: 2, col: 3, offset: 16 });
  });
});

describe('parseCondition: names, functions, arity', () => {
  it('rejects unknown root names with the expected list', () => {
    const issue = only("foo == 'x'");
    expect(issue).toEqual({
      code: 'condition.unknown_name',
      message:
        "unknown name 'foo'; expected agent_id, action, resource, amount, session_id, on_behalf_of, context.…, agent.attributes.…, session.labels or history.count|sum|exists|denied(...)",
      offset: 0,
      line: 1,
      col: 1,
    });
  });

  it('reports every name problem, not just the first', () => {
    const result = parseCondition("foo == 1 && bar(1, 2) && startsWith('a')");
    expect(result.issues.map((i) => [i.code, i.offset])).toEqual([
      ['condition.unknown_name', 0],
      ['condition.unknown_function', 12],
      ['condition.arity', 25],
    ]);
  });

  it('rejects fields on non-context roots and prototype-ish field names', () => {
    expect(only('amount.value > 1')).toMatchObject({ code: 'condition.unknown_name', offset: 7 });
    expect(only('context.__proto__ == null')).toMatchObject({ code: 'condition.unknown_name', offset: 8 });
    expect(only('context.a.constructor == null')).toMatchObject({ code: 'condition.unknown_name', offset: 10 });
    expect(only('context.prototype == null').code).toBe('condition.unknown_name');
  });

  it('suggests the right spelling of a function', () => {
    expect(only("startswith(resource, 'a')")).toMatchObject({
      code: 'condition.unknown_function',
      message: expect.stringContaining('did you mean startsWith?'),
    });
    expect(only('amount(1)').code).toBe('condition.unknown_function');
  });

  it('checks arity', () => {
    expect(only("matches(resource, 'a', 'b')")).toMatchObject({
      code: 'condition.arity',
      message: 'matches takes 2 arguments but got 3',
    });
    expect(only('contains()')).toMatchObject({
      code: 'condition.arity',
      message: 'contains takes 2 arguments but got 0',
    });
  });
});

describe('parseCondition: limits', () => {
  it(`accepts ${MAX_LENGTH} characters and rejects more`, () => {
    const pad = (n: number) => `amount > 1${' '.repeat(n - 10)}`;
    expect(parseCondition(pad(MAX_LENGTH)).issues).toEqual([]);
    const issue = only(pad(MAX_LENGTH + 1));
    expect(issue.code).toBe('condition.too_long');
    expect(issue.offset).toBe(MAX_LENGTH);
  });

  it(`accepts ${MAX_DEPTH} levels of nesting and rejects ${MAX_DEPTH + 1}`, () => {
    const parens = (n: number) => `${'('.repeat(n)}amount > 1${')'.repeat(n)}`;
    expect(parseCondition(parens(MAX_DEPTH)).issues).toEqual([]);
    expect(only(parens(MAX_DEPTH + 1))).toMatchObject({ code: 'condition.too_deep', offset: MAX_DEPTH });
    const nots = (n: number) => `${'!'.repeat(n)}context.x`;
    expect(parseCondition(nots(MAX_DEPTH)).issues).toEqual([]);
    expect(only(nots(MAX_DEPTH + 1)).code).toBe('condition.too_deep');
    // Brackets, calls and ! add up.
    const mixed = `${'!('.repeat(16)}contains([1], 1)${')'.repeat(16)}`;
    expect(only(mixed).code).toBe('condition.too_deep');
  });

  it('does not count long flat chains as nesting', () => {
    const chain = Array.from({ length: 200 }, (_, i) => `!(amount > ${i})`).join(' && ');
    expect(chain.length).toBeLessThan(MAX_LENGTH);
    expect(parseCondition(chain).issues).toEqual([]);
  });

  it('rejects pathological nesting at the first level past the limit, before parsing, without overflowing the stack (its time: bench/compiler)', () => {
    for (const text of [
      '('.repeat(4000),
      '!'.repeat(4000),
      '['.repeat(4000),
      `${'('.repeat(2000)}x${')'.repeat(2000)}`,
      'startsWith('.repeat(370),
    ]) {
      const result = parseCondition(text);
      expect(result.ast).toBeUndefined();
      expect(result.issues).toHaveLength(1);
      const issue = result.issues[0]!;
      expect(issue.code).toBe('condition.too_deep');
      // Reported where the depth first passes MAX_DEPTH: the linear pre-scan of the
      // tokens stopped there (the recursive parser never saw the text).
      const openers = (text.slice(0, issue.offset + 1).match(/[([!]/g) ?? []).length;
      expect(openers, text.slice(0, 20)).toBe(MAX_DEPTH + 1);
    }
    expect(only('('.repeat(10_000)).code).toBe('condition.too_long');
  });
});

describe('printCondition and conditionPaths', () => {
  it('prints canonical text', () => {
    const cases: Array<[string, string]> = [
      ['amount<=50&&context.channel=="chat"', "amount <= 50 && context.channel == 'chat'"],
      ['(context.a || context.b) && !(amount > 1)', '(context.a || context.b) && !(amount > 1)'],
      ['!amount > 1', '!(amount > 1)'],
      ['context.a || (context.b || context.c)', 'context.a || (context.b || context.c)'],
      ['(context.a) && ((context.b))', 'context.a && context.b'],
      ["context.x in [1,'a\\'b',null]", "context.x in [1, 'a\\'b', null]"],
      ['(amount > 1) == context.f', '(amount > 1) == context.f'],
      ['(!context.f) == true', '(!context.f) == true'],
      ['contains(context.tags, "x\\ny")', "contains(context.tags, 'x\\ny')"],
    ];
    for (const [input, printed] of cases) {
      expect(printCondition(ast(input))).toBe(printed);
      expect(printCondition(ast(printed))).toBe(printed);
    }
  });

  it('lists the paths read, once each, in order', () => {
    expect(conditionPaths(ast("amount <= 50 && context.channel == 'chat' && amount > 1"))).toEqual([
      'amount',
      'context.channel',
    ]);
    expect(conditionPaths(ast("resource in [context.a.b, 'x'] || startsWith(agent_id, action)"))).toEqual([
      'resource',
      'context.a.b',
      'agent_id',
      'action',
    ]);
    expect(conditionPaths(ast('true'))).toEqual([]);
  });
});
