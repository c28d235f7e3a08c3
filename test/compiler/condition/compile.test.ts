import { describe, expect, it } from 'vitest';
import {
  analyzeCondition,
  compileCondition,
  parseCondition,
  type ConditionAst,
} from '../../../compiler/condition/index.js';
import { globWork } from '../../../compiler/patterns/glob.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';

function compiled(text: string): (input: EvaluationInput) => boolean {
  const analysis = analyzeCondition(text);
  expect(analysis.issues, text).toEqual([]);
  return analysis.evaluate!;
}

const base: EvaluationInput = { agent_id: 'support-bot-1', action: 'payments.refund' };
const withContext = (
  context: Record<string, unknown> | null | undefined,
  extra: Partial<EvaluationInput> = {},
): EvaluationInput => (context === undefined ? { ...base, ...extra } : { ...base, ...extra, context });

/** Each row: condition, request, expected. */
function table(rows: Array<[string, EvaluationInput, boolean]>) {
  for (const [text, request, expected] of rows) {
    it(`${text} on ${JSON.stringify(request)} is ${expected}`, () => {
      const result = compiled(text)(request);
      expect(typeof result).toBe('boolean');
      expect(result).toBe(expected);
    });
  }
}

describe('compileCondition: the example from the policy docs', () => {
  const f = compiled("amount <= 50 && context.channel == 'chat'");
  it('holds exactly when both parts hold', () => {
    expect(f({ ...base, amount: 50, context: { channel: 'chat' } })).toBe(true);
    expect(f({ ...base, amount: 51, context: { channel: 'chat' } })).toBe(false);
    expect(f({ ...base, amount: 10, context: { channel: 'email' } })).toBe(false);
    expect(f({ ...base, context: { channel: 'chat' } })).toBe(false);
    expect(f({ ...base, amount: null, context: { channel: 'chat' } })).toBe(false);
    expect(f({ ...base, amount: 10 })).toBe(false);
    expect(f({ ...base, amount: 10, context: null })).toBe(false);
  });
});

describe('compileCondition: logic truth tables', () => {
  const ctx = (a: unknown, b: unknown) => withContext({ a, b });
  const rows: Array<[string, EvaluationInput, boolean]> = [];
  for (const a of [true, false]) {
    for (const b of [true, false]) {
      rows.push(['context.a && context.b', ctx(a, b), a && b]);
      rows.push(['context.a || context.b', ctx(a, b), a || b]);
      rows.push(['!context.a || context.b', ctx(a, b), !a || b]);
      rows.push(['!(context.a && context.b)', ctx(a, b), !(a && b)]);
    }
  }
  table(rows);
  table([
    ['true', base, true],
    ['false', base, false],
    ['!false', base, true],
    ['!!true', base, true],
    ['true && true && false', base, false],
    ['false || false || true', base, true],
  ]);
});

describe('compileCondition: non-boolean and missing values used as conditions', () => {
  table([
    ['context.is_vip', withContext({ is_vip: true }), true],
    ['context.is_vip', withContext({ is_vip: 'true' }), false],
    ['context.is_vip', withContext({ is_vip: 1 }), false],
    ['context.is_vip', withContext({}), false],
    ['!context.is_vip', withContext({}), true],
    ['!context.is_vip', withContext({ is_vip: 'yes' }), true],
    ['context.flag && true', withContext({ flag: 'yes' }), false],
    ['context.flag || true', withContext({ flag: 'yes' }), true],
    ['context.flag || context.other', withContext({ flag: 'yes', other: true }), true],
  ]);
});

describe('compileCondition: missing values make comparisons false', () => {
  table([
    ["context.tier == 'gold'", withContext({}), false],
    ["context.tier != 'gold'", withContext({}), false],
    ["!(context.tier == 'gold')", withContext({}), true],
    ["context.tier != 'gold'", withContext({ tier: 'silver' }), true],
    ["context.tier != 'gold'", withContext({ tier: 'gold' }), false],
    ["context.tier != 'gold'", withContext(undefined), false],
    ["context.tier != 'gold'", withContext(null), false],
    ['context.a.b != 1', withContext({ a: 5 }), false],
    ['context.a.b != 1', withContext({ a: { b: 2 } }), true],
    ['context.a == context.b', withContext({}), false],
    ['context.a != context.b', withContext({ a: 1 }), false],
    ['context.a != context.b', withContext({ b: 1 }), false],
    ["resource != 'doc:1'", base, false],
    ["resource != 'doc:1'", { ...base, resource: null }, false],
    ["resource != 'doc:1'", { ...base, resource: 'doc:2' }, true],
    ['amount != 5', base, false],
    ['amount < 5', base, false],
    ['amount >= 5', { ...base, amount: null }, false],
    ['context.n < 5', withContext({}), false],
    ['context.x in [1, 2]', withContext({}), false],
    ['context.x in context.list', withContext({ list: [1] }), false],
    ["startsWith(resource, 'doc')", base, false],
    ["contains(context.tags, 'vip')", withContext({}), false],
    ['contains(context.tags, context.tag)', withContext({ tags: ['vip'] }), false],
    ["matches(context.name, 'a*')", withContext({}), false],
    ['!(context.n < 5)', withContext({}), true],
  ]);
});

describe('compileCondition: explicit null checks', () => {
  table([
    ['resource == null', base, true],
    ['resource == null', { ...base, resource: null }, true],
    ['resource == null', { ...base, resource: 'doc:1' }, false],
    ['resource != null', base, false],
    ['resource != null', { ...base, resource: 'doc:1' }, true],
    ['null == resource', base, true],
    ['amount == null', { ...base, amount: 0 }, false],
    ['amount != null', { ...base, amount: 0 }, true],
    ['context.x == null', withContext({}), true],
    ['context.x == null', withContext({ x: null }), true],
    ['context.x == null', withContext({ x: 0 }), false],
    ['context.x == null', withContext(undefined), true],
    ['context.x != null', withContext({}), false],
    ['context.x != null', withContext({ x: null }), false],
    ['context.x != null', withContext({ x: false }), true],
    ['context == null', withContext(undefined), true],
    ['context == null', withContext({}), false],
    ['null == null', base, true],
    ['null != null', base, false],
    ['context.x in [null]', withContext({ x: null }), true],
    ['context.x in [null]', withContext({}), false],
  ]);
});

describe('compileCondition: equality', () => {
  table([
    ['context.x == 1', withContext({ x: 1 }), true],
    ["context.x == '1'", withContext({ x: 1 }), false],
    ["context.x != '1'", withContext({ x: 1 }), true],
    ['context.x == true', withContext({ x: true }), true],
    ['context.x == true', withContext({ x: 1 }), false],
    ['context.x == [1, 2]', withContext({ x: [1, 2] }), true],
    ['context.x == [1, 2]', withContext({ x: [2, 1] }), false],
    ['context.x != [1, 2]', withContext({ x: [1, 2, 3] }), true],
    ['context.x == [1, amount]', withContext({ x: [1, 2] }, { amount: 2 }), true],
    ['context.x == [1, amount]', withContext({ x: [1, null] }), false],
    ['context.a == context.b', withContext({ a: { k: [1, { z: 'q' }] }, b: { k: [1, { z: 'q' }] } }), true],
    ['context.a == context.b', withContext({ a: { k: 1, j: 2 }, b: { j: 2, k: 1 } }), true],
    ['context.a == context.b', withContext({ a: { k: 1 }, b: { k: 1, j: 2 } }), false],
    ['context.a == context.b', withContext({ a: { k: 1 }, b: [1] }), false],
    ['context.a != context.b', withContext({ a: { k: 1 }, b: [1] }), true],
    ['context.a == context.b', withContext({ a: null, b: null }), true],
    ["agent_id == 'support-bot-1'", base, true],
    ["action != 'payments.refund'", base, false],
    ['1 == 1.0', base, true],
    ['\'a\' == "a"', base, true],
    ['(amount > 5) == context.flag', withContext({ flag: true }, { amount: 6 }), true],
    ['(amount > 5) == context.flag', withContext({ flag: true }, { amount: 4 }), false],
  ]);
});

describe('compileCondition: ordering', () => {
  table([
    ['amount < 5', { ...base, amount: 4.99 }, true],
    ['amount < 5', { ...base, amount: 5 }, false],
    ['amount <= 5', { ...base, amount: 5 }, true],
    ['amount > 5', { ...base, amount: 5 }, false],
    ['amount >= 5', { ...base, amount: 5 }, true],
    ['amount > -3', { ...base, amount: -2 }, true],
    ['5 > amount', { ...base, amount: 4 }, true],
    ['context.n < 5', withContext({ n: '4' }), false],
    ['context.n < 5', withContext({ n: true }), false],
    ['context.n < 5', withContext({ n: [1] }), false],
    ["context.s < 'b'", withContext({ s: 'a' }), true],
    ["context.s < 'b'", withContext({ s: 'ba' }), false],
    ["context.s >= 'b'", withContext({ s: 1 }), false],
    ["agent_id > 'a'", base, true],
    ['context.a < context.b', withContext({ a: 1, b: 2 }), true],
    ['context.a < context.b', withContext({ a: 'x', b: 'y' }), true],
    ['context.a < context.b', withContext({ a: 1, b: 'y' }), false],
    ['context.a <= amount', withContext({ a: 3 }, { amount: 3 }), true],
  ]);
});

describe('compileCondition: membership', () => {
  const many = `[${Array.from({ length: 20 }, (_, i) => `'v${i}'`).join(', ')}]`;
  table([
    ["action in ['payments.refund', 'payments.charge']", base, true],
    ["action in ['payments.charge']", base, false],
    ['action in []', base, false],
    [`context.v in ${many}`, withContext({ v: 'v17' }), true],
    [`context.v in ${many}`, withContext({ v: 'v20' }), false],
    [`context.v in ${many}`, withContext({}), false],
    ["context.x in [1, '1']", withContext({ x: '1' }), true],
    ['context.x in [1, 2]', withContext({ x: '1' }), false],
    ['context.x in [context.a, context.b]', withContext({ x: 2, b: 2 }), true],
    ['context.x in [context.a, amount]', withContext({ x: [1] }, { amount: 2 }), false],
    ['amount in [1, context.limit]', withContext({ limit: 7 }, { amount: 7 }), true],
    ['context.tier in context.tiers', withContext({ tier: 'gold', tiers: ['silver', 'gold'] }), true],
    ['context.tier in context.tiers', withContext({ tier: 'gold', tiers: 'gold' }), false],
    ['context.tier in context.tiers', withContext({ tier: 'gold', tiers: { gold: true } }), false],
    [
      'context.pair in context.pairs',
      withContext({
        pair: [1, 2],
        pairs: [
          [2, 1],
          [1, 2],
        ],
      }),
      true,
    ],
  ]);
});

describe('compileCondition: functions', () => {
  table([
    ["startsWith(resource, 'doc:')", { ...base, resource: 'doc:1' }, true],
    ["startsWith(resource, 'doc:')", { ...base, resource: 'img:1' }, false],
    ["endsWith(agent_id, '-1')", base, true],
    ['startsWith(context.path, context.prefix)', withContext({ path: '/a/b', prefix: '/a' }), true],
    ['startsWith(context.path, context.prefix)', withContext({ path: '/a/b', prefix: 1 }), false],
    ['endsWith(context.path, context.suffix)', withContext({ path: 5, suffix: '5' }), false],
    ["contains(resource, 'secret')", { ...base, resource: 'doc:top-secret-1' }, true],
    ["contains(resource, 'secret')", { ...base, resource: 'doc:1' }, false],
    ["contains(context.tags, 'vip')", withContext({ tags: ['new', 'vip'] }), true],
    ["contains(context.tags, 'vip')", withContext({ tags: 'vip member' }), true],
    ["contains(context.tags, 'vip')", withContext({ tags: { vip: true } }), false],
    ['contains(context.tags, 1)', withContext({ tags: 'a1' }), false],
    ["contains(['a', 'b'], context.x)", withContext({ x: 'b' }), true],
    ['contains([], context.x)', withContext({ x: 'b' }), false],
    ["matches(agent_id, 'support-*')", base, true],
    ["matches(agent_id, 'sales-*')", base, false],
    ["matches(agent_id, '*bot*')", base, true],
    ["matches(agent_id, 'support-bot-1')", base, true],
    ['matches(resource, context.pattern)', withContext({ pattern: 'doc:*' }, { resource: 'doc:9' }), true],
    ['matches(resource, context.pattern)', withContext({ pattern: 'img:*' }, { resource: 'doc:9' }), false],
    ['matches(resource, context.pattern)', withContext({ pattern: 7 }, { resource: 'doc:9' }), false],
  ]);

  it('reuses a compiled dynamic glob but follows changes', () => {
    const f = compiled('matches(resource, context.pattern)');
    expect(f(withContext({ pattern: 'a*' }, { resource: 'abc' }))).toBe(true);
    expect(f(withContext({ pattern: 'a*' }, { resource: 'xbc' }))).toBe(false);
    expect(f(withContext({ pattern: 'x*' }, { resource: 'xbc' }))).toBe(true);
    expect(f(withContext({ pattern: 'a*' }, { resource: 'xbc' }))).toBe(false);
  });

  it('matches in linear time on adversarial globs (in matcher steps, not by a timer; its time is in bench/compiler)', () => {
    const pattern = `${'*a'.repeat(50)}*b`;
    const f = compiled(`matches(context.s, '${pattern}')`);
    const before = globWork.steps;
    expect(f(withContext({ s: 'a'.repeat(20_000) }))).toBe(false);
    const steps = globWork.steps - before;
    expect(steps).toBeGreaterThan(0);
    expect(steps).toBeLessThanOrEqual(2 * (20_000 + pattern.length));
  });
});

describe('compileCondition: context walking is safe', () => {
  table([
    ['context.a.b.c == 1', withContext({ a: { b: { c: 1 } } }), true],
    ['context.a.b.c == 1', withContext({ a: { b: [1] } }), false],
    ['context.a.length == 2', withContext({ a: [1, 2] }), false],
    ['context.a.length == null', withContext({ a: 'xy' }), true],
    ['context.toString == null', withContext({}), true],
    ['context.hasOwnProperty != null', withContext({}), false],
    ['context.a.toString != null', withContext({ a: {} }), false],
    ['context.a.b == 1', withContext({ a: Object.assign(Object.create({ b: 1 }) as object, {}) }), false],
    ['context.d.x == 1', withContext({ d: Object.assign(new Date(0), { x: 1 }) }), false],
    ['context.n.x == 1', withContext({ n: Object.assign(Object.create(null) as object, { x: 1 }) }), true],
    ['context.u == null', withContext({ u: undefined }), true],
    ['context.u != 1', withContext({ u: undefined }), false],
  ]);

  it('reads an own __proto__ key from JSON only as data, and never the prototype', () => {
    const context = JSON.parse('{"a": {"__proto__": {"polluted": true}}}') as Record<string, unknown>;
    expect(compiled('context.a.polluted == null')({ ...base, context })).toBe(true);
    expect(compiled('context.a != null')({ ...base, context })).toBe(true);
    // A stored AST that names a forbidden field compiles to "missing".
    const pos = { offset: 0, line: 1, col: 1 };
    const ast = {
      kind: 'compare',
      op: '!=',
      left: { kind: 'path', root: 'context', segments: ['a', '__proto__'], pos },
      right: { kind: 'literal', value: null, pos },
      pos,
      opPos: pos,
    } as ConditionAst;
    expect(compileCondition(ast)({ ...base, context })).toBe(false);
  });
});

describe('compileCondition: short circuit and purity', () => {
  it('&& and || stop at the first deciding operand', () => {
    let reads = 0;
    const context: Record<string, unknown> = { off: false, on: true };
    Object.defineProperty(context, 'probe', { enumerable: true, get: () => (reads++, true) });
    compiled('context.off && context.probe')({ ...base, context });
    compiled('context.on || context.probe')({ ...base, context });
    compiled("context.off && context.probe == 'x' && startsWith(context.probe, 'a')")({ ...base, context });
    expect(reads).toBe(0);
    compiled('context.on && context.probe')({ ...base, context });
    expect(reads).toBe(1);
  });

  it('compiles once and gives the same answer on repeated calls', () => {
    const f = compiled("amount <= 50 && context.channel == 'chat'");
    const request = { ...base, amount: 20, context: { channel: 'chat' } };
    for (let i = 0; i < 1000; i++) expect(f(request)).toBe(true);
    expect(request).toEqual({ ...base, amount: 20, context: { channel: 'chat' } });
  });

  it('deep equality on very deep values does not overflow', () => {
    let a: unknown = 1;
    let b: unknown = 1;
    for (let i = 0; i < 50_000; i++) {
      a = [a];
      b = [b];
    }
    const f = compiled('context.a == context.b');
    expect(f(withContext({ a, b }))).toBe(false);
    expect(f(withContext({ a, b: a }))).toBe(true);
  });

  it('throws on a structurally broken AST instead of guessing', () => {
    const pos = { offset: 0, line: 1, col: 1 };
    expect(() => compileCondition({ kind: 'bogus', pos } as unknown as ConditionAst)).toThrow(/not a condition node/);
    expect(() =>
      compileCondition({
        kind: 'call',
        fn: 'eval',
        args: [
          { kind: 'literal', value: 1, pos },
          { kind: 'literal', value: 1, pos },
        ],
        pos,
      } as unknown as ConditionAst),
    ).toThrow(/unknown function/);
  });

  it('does not use eval or new Function', async () => {
    const { readFile } = await import('node:fs/promises');
    for (const file of ['compile.ts', 'fold.ts', 'ast.ts', 'check.ts']) {
      const source = await readFile(new URL(`../../../compiler/condition/${file}`, import.meta.url), 'utf8');
      const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      expect(code).not.toMatch(/\beval\s*\(|new\s+Function\b/);
    }
  });
});

describe('analyzeCondition', () => {
  it('returns issues from each stage and an evaluator only when clean', () => {
    expect(analyzeCondition('amount <').evaluate).toBeUndefined();
    const typed = analyzeCondition("amount < 'x'");
    expect(typed.ast).toBeDefined();
    expect(typed.issues.map((i) => i.code)).toEqual(['condition.type']);
    expect(typed.evaluate).toBeUndefined();
    const ok = analyzeCondition('amount < 3');
    expect(ok.issues).toEqual([]);
    expect(ok.evaluate!({ ...base, amount: 2 })).toBe(true);
    expect(parseCondition('amount < 3').ast).toEqual(ok.ast);
  });
});
