import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  compileCondition,
  isConstantFalse,
  MAX_LENGTH,
  parseCondition,
  printCondition,
  type ConditionAst,
} from '../../../compiler/condition/index.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';
import { historyProbe, type HistoryFunction, type HistoryScope } from '../../../compiler/history/probe.js';

const pos = { offset: 0, line: 1, col: 1 };

/** The AST without positions, for structural comparison. */
function strip(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strip);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (k !== 'pos' && k !== 'opPos') out[k] = strip(v);
  return out;
}

type Lit = string | number | boolean | null;
const FIELDS = ['a', 'b', 'in', 'true', 'x_1'];
const OPS = ['==', '!=', '<', '<=', '>', '>=', 'in'] as const;
const FNS = ['startsWith', 'endsWith', 'contains', 'matches'] as const;
const ARITH_OPS = ['+', '-', '*', '/'] as const;
const HISTORY_FNS = ['count', 'sum', 'exists', 'denied'] as const;
const lit = (value: Lit): ConditionAst => ({ kind: 'literal', value, pos });
const strList = (items: string[]): ConditionAst => ({
  kind: 'list',
  items: items.map((v) => ({ kind: 'literal', value: v, pos })),
  pos,
});

/** History calls with valid literal arguments from small pools (so that probes repeat and values meet). */
const historyCall: fc.Arbitrary<ConditionAst> = fc
  .tuple(
    fc.constantFrom(...HISTORY_FNS),
    fc.oneof(
      fc.constantFrom('x.go', 'x.*', '*'),
      fc.uniqueArray(fc.constantFrom('x.go', 'y.go', 'x.*'), { minLength: 1, maxLength: 2 }),
    ),
    fc.constantFrom('1h', '60m', '1d'),
    fc.option(fc.constantFrom('session', 'agent', 'user', 'environment'), { nil: undefined }),
    fc.option(fc.constantFrom<string[]>([], ['resource'], ['context.a']), { nil: undefined }),
  )
  .map(([fn, actions, window, scope, match]): ConditionAst => {
    const args = [typeof actions === 'string' ? lit(actions) : strList(actions), lit(window)];
    if (scope !== undefined || match !== undefined) args.push(lit(scope ?? 'session'));
    if (match !== undefined) args.push(strList(match));
    return { kind: 'history', fn, args, pos };
  });

/** Random well-formed ASTs (names valid, types not necessarily). */
function astArbitrary(literalValue: fc.Arbitrary<Lit>, maxDepth: number): fc.Arbitrary<ConditionAst> {
  const literal = literalValue.map((value): ConditionAst => ({ kind: 'literal', value, pos }));
  const path = fc.oneof(
    fc
      .constantFrom('agent_id', 'action', 'resource', 'amount')
      .map((root): ConditionAst => ({ kind: 'path', root: root as 'amount', segments: [], pos })),
    fc
      .array(fc.constantFrom(...FIELDS), { maxLength: 3 })
      .map((segments): ConditionAst => ({ kind: 'path', root: 'context', segments, pos })),
  );
  const leaf = fc.oneof(
    literal,
    path,
    fc.constant<ConditionAst>({ kind: 'path', root: 'session', segments: ['labels'], pos }),
  );
  const list = fc
    .array(leaf, { maxLength: 3 })
    .map((items): ConditionAst => ({ kind: 'list', items: items as never, pos }));
  const { node } = fc.letrec<{ node: ConditionAst }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', maxDepth },
      leaf,
      historyCall,
      list,
      tie('node').map((operand): ConditionAst => ({ kind: 'not', operand, pos })),
      fc
        .tuple(fc.constantFrom('and' as const, 'or' as const), fc.array(tie('node'), { minLength: 2, maxLength: 3 }))
        .map(([kind, operands]): ConditionAst => ({ kind, operands, pos })),
      fc
        .tuple(fc.constantFrom(...OPS), tie('node'), fc.oneof(tie('node'), list))
        .map(([op, left, right]): ConditionAst => ({ kind: 'compare', op, left, right, pos, opPos: pos })),
      fc
        .tuple(fc.constantFrom(...FNS), fc.oneof(tie('node'), list), tie('node'))
        .map(([fn, a, b]): ConditionAst => ({ kind: 'call', fn, args: [a, b], pos })),
      fc
        .tuple(fc.constantFrom(...ARITH_OPS), tie('node'), tie('node'))
        .map(([op, left, right]): ConditionAst => ({ kind: 'arith', op, left, right, pos, opPos: pos })),
    ),
  }));
  return node;
}

const anyNumber = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
);
const anyString = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom("'", '"', '\\', '\n', '\t', "\\'", '\r\n', 'a*b', 'é😀'),
);
const anyLiteral: fc.Arbitrary<Lit> = fc.oneof(anyNumber, anyString, fc.boolean(), fc.constant(null));

describe('round trip', () => {
  it('parse(print(ast)) gives back the same AST', () => {
    fc.assert(
      fc.property(astArbitrary(anyLiteral, 4), (ast) => {
        const text = printCondition(ast);
        fc.pre(text.length <= MAX_LENGTH);
        const parsed = parseCondition(text);
        expect(parsed.issues).toEqual([]);
        expect(strip(parsed.ast)).toEqual(strip(ast));
        expect(printCondition(parsed.ast!)).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });

  it('parseCondition never throws and reports positions inside the text', () => {
    const alphabet = fc.constantFrom(
      'amount',
      'context',
      '.',
      'a',
      ' ',
      '\n',
      '(',
      ')',
      '[',
      ']',
      ',',
      '!',
      '&&',
      '||',
      '&',
      '==',
      '=',
      '<',
      '>=',
      'in',
      '1',
      '-',
      "'",
      '"',
      '\\',
      'startsWith',
      'null',
      'x',
    );
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 25 }).map((parts) => parts.join('')),
        (text) => {
          const result = parseCondition(text);
          expect(result.ast === undefined).toBe(result.issues.length > 0);
          const lines = text.split(/\r\n|\r|\n/);
          for (const issue of result.issues) {
            expect(issue.offset).toBeGreaterThanOrEqual(0);
            expect(issue.offset).toBeLessThanOrEqual(text.length);
            expect(issue.line).toBeGreaterThanOrEqual(1);
            expect(issue.line).toBeLessThanOrEqual(lines.length);
            expect(issue.col).toBeGreaterThanOrEqual(1);
            expect(issue.message.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

// ---- A tiny reference interpreter, written straight from the documented rules. ----

const MISSING = Symbol('missing');
type V = unknown;

function canon(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
const same = (a: V, b: V) => canon(a) === canon(b);

function read(req: EvaluationInput, node: Extract<ConditionAst, { kind: 'path' }>): V {
  if (node.root === 'agent_id') return req.agent_id;
  if (node.root === 'action') return req.action;
  if (node.root === 'resource') return req.resource ?? MISSING;
  if (node.root === 'amount') return req.amount ?? MISSING;
  if (node.root === 'session') return req.session_labels ?? [];
  let v: unknown = req.context ?? MISSING;
  for (const seg of node.segments) {
    if (
      v === MISSING ||
      v === null ||
      typeof v !== 'object' ||
      Array.isArray(v) ||
      !Object.prototype.hasOwnProperty.call(v, seg)
    )
      return MISSING;
    v = (v as Record<string, unknown>)[seg];
  }
  return v === undefined ? MISSING : v;
}

function val(req: EvaluationInput, node: ConditionAst): V {
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'path':
      return read(req, node);
    case 'list': {
      const items = node.items.map((i) => val(req, i));
      return items.includes(MISSING) ? MISSING : items;
    }
    case 'arith': {
      const a = val(req, node.left);
      const b = val(req, node.right);
      if (typeof a !== 'number' || typeof b !== 'number') return MISSING;
      const r = node.op === '+' ? a + b : node.op === '-' ? a - b : node.op === '*' ? a * b : a / b;
      return Number.isFinite(r) ? r : MISSING;
    }
    case 'history':
      return node.fn === 'exists' ? truth(req, node) : historyCount(req, node);
    default:
      return truth(req, node);
  }
}

/** The provider's value for the call, looked up by a probe built from the call's literal arguments. */
function historyCount(req: EvaluationInput, node: Extract<ConditionAst, { kind: 'history' }>): V {
  const text = (n: ConditionAst | undefined): string[] =>
    n === undefined
      ? []
      : n.kind === 'literal'
        ? [n.value as string]
        : (n as { items: Array<{ value: string }> }).items.map((i) => i.value);
  const [actions, window, scope, match] = node.args;
  const probe = historyProbe(
    node.fn as HistoryFunction,
    text(actions),
    text(window)[0]!,
    (text(scope)[0] ?? 'session') as HistoryScope,
    text(match),
  );
  const v = req.history ? req.history(probe) : null;
  return typeof v === 'number' ? v : MISSING;
}

function member(req: EvaluationInput, x: V, list: ConditionAst): boolean {
  if (x === MISSING) return false;
  if (list.kind === 'list')
    return list.items.some((i) => {
      const e = val(req, i);
      return e !== MISSING && same(x, e);
    });
  const l = val(req, list);
  return Array.isArray(l) && l.some((e) => same(x, e));
}

function globRegex(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split('*')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
}

function truth(req: EvaluationInput, node: ConditionAst): boolean {
  switch (node.kind) {
    case 'literal':
      return node.value === true;
    case 'path':
      return read(req, node) === true;
    case 'list':
      return false;
    case 'not':
      return !truth(req, node.operand);
    case 'and':
      return node.operands.every((o) => truth(req, o));
    case 'or':
      return node.operands.some((o) => truth(req, o));
    case 'compare': {
      const { op, left, right } = node;
      if (op === 'in') return member(req, val(req, left), right);
      const isNull = (n: ConditionAst) => n.kind === 'literal' && n.value === null;
      if ((op === '==' || op === '!=') && (isNull(left) || isNull(right))) {
        const v = val(req, isNull(left) ? right : left);
        const nullish = v === MISSING || v === null;
        return op === '==' ? nullish : !nullish;
      }
      const a = val(req, left);
      const b = val(req, right);
      if (a === MISSING || b === MISSING) return false;
      if (op === '==') return same(a, b);
      if (op === '!=') return !same(a, b);
      const ok = (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
      if (!ok) return false;
      const [x, y] = [a as number, b as number];
      return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : x >= y;
    }
    case 'arith':
      return false;
    case 'history': {
      if (node.fn !== 'exists') return false;
      const v = historyCount(req, node);
      return typeof v === 'number' && v > 0;
    }
    case 'call': {
      const [first, second] = node.args as [ConditionAst, ConditionAst];
      if (node.fn === 'contains' && first.kind === 'list') return member(req, val(req, second), first);
      const a = val(req, first);
      const b = val(req, second);
      if (node.fn === 'contains') {
        if (typeof a === 'string') return typeof b === 'string' && a.includes(b);
        return Array.isArray(a) && b !== MISSING && a.some((e) => same(e, b));
      }
      if (typeof a !== 'string' || typeof b !== 'string') return false;
      if (node.fn === 'startsWith') return a.startsWith(b);
      if (node.fn === 'endsWith') return a.endsWith(b);
      return globRegex(b).test(a);
    }
  }
}

// Small value pools so that generated literals and inputs actually meet.
const scalar = fc.constantFrom<Lit>(0, 1, 2, -5, 'a', 'b', '', 'a*', 'ab', true, false, null);
const jsonish: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom(...FIELDS), scalar, { maxKeys: 2 }) },
);
const contextValue: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  fc.constantFrom(...FIELDS),
  fc.oneof(jsonish, fc.dictionary(fc.constantFrom(...FIELDS), jsonish, { maxKeys: 3 })),
  { maxKeys: 5 },
);
/** A history provider: a value (or null: unknown) per probe key, from a small pool (or none at all). */
const historyProvider: fc.Arbitrary<EvaluationInput['history']> = fc.option(
  fc.func(fc.constantFrom<number | null>(0, 1, 2, 3, 7.5, null)).map((f) => (probe: { key: string }) => f(probe.key)),
  { nil: undefined },
);
const request: fc.Arbitrary<EvaluationInput> = fc.record(
  {
    agent_id: fc.constantFrom('a', 'ab', 'b'),
    action: fc.constantFrom('a', 'b', 'x.y'),
    resource: fc.option(fc.constantFrom('a', 'ab', 'b', ''), { nil: null }),
    amount: fc.option(fc.constantFrom(0, 1, 2, -5), { nil: null }),
    context: fc.option(contextValue, { nil: null }),
    session_labels: fc.option(fc.uniqueArray(fc.constantFrom('a', 'b', 'private'), { maxLength: 3 }), { nil: null }),
    history: historyProvider,
  },
  { requiredKeys: ['agent_id', 'action'] },
);

describe('compiled closures agree with a reference interpreter', () => {
  it('on random conditions and requests', () => {
    fc.assert(
      fc.property(astArbitrary(scalar, 4), fc.array(request, { minLength: 1, maxLength: 5 }), (ast, requests) => {
        const f = compileCondition(ast);
        for (const req of requests) expect(f(req)).toBe(truth(req, ast));
      }),
      { numRuns: 2000 },
    );
  });

  it('isConstantFalse is sound: a constant-false condition is false for every request', () => {
    fc.assert(
      fc.property(astArbitrary(scalar, 3), fc.array(request, { minLength: 1, maxLength: 8 }), (ast, requests) => {
        if (!isConstantFalse(ast)) return;
        const f = compileCondition(ast);
        for (const req of requests) expect(f(req)).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });
});
