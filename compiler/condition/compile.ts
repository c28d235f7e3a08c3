/**
 * Compiles a condition AST into a closure `(request) => boolean`, built from
 * nested closures (never `eval` / `new Function`). Path segments are resolved
 * once, literal lists and literal globs are prepared once; a call allocates
 * nothing except where noted (a list literal containing paths compared with
 * `==`, a non-literal glob that changed since the previous call).
 *
 * Runtime semantics
 *
 * 1. Values. `agent_id`, `action` are the request's strings. `resource` and
 *    `amount` are MISSING when absent or null. `context` is the request's context
 *    (MISSING when absent or null); `agent.attributes` is the agent's stored
 *    attributes (MISSING when absent or null), walked like `context`;
 *    `context.a.b` walks own properties only
 *    (`Object.hasOwn`: inherited and polluted prototype properties are never
 *    seen), and only through plain objects (prototype `Object.prototype` or null;
 *    an object whose `constructor` is `Object` counts as plain without the
 *    prototype lookup): walking into an array, a class instance, a Date, a
 *    primitive or an absent key gives MISSING, and so does a value that is
 *    `undefined`. Field names `__proto__`, `constructor`, `prototype` are
 *    rejected at compile time and read as MISSING here.
 * 2. Missing values. A comparison (`== != < <= > >= in`) or a function call that
 *    reads a MISSING operand is false — `!=` included: with no `context.tier`,
 *    both `context.tier == 'gold'` and `context.tier != 'gold'` are false, while
 *    `!(context.tier == 'gold')` is true. Exception, explicit null checks against
 *    the `null` literal: `x == null` is true when x is MISSING or null, and
 *    `x != null` is true when x is present and not null.
 * 3. Equality. `==` is deep equality of JSON values of the same type (numbers and
 *    strings by value, arrays element-wise, plain objects by own keys);
 *    different types are unequal (`1 == '1'` is false, `1 != '1'` true). Values
 *    nested more than 64 levels deep compare unequal.
 * 4. Ordering. `<  <= > >=` hold only between two numbers or two strings (strings
 *    compare by UTF-16 code units); any other pair of types gives false.
 * 5. Membership. `x in [a, b]` is true when x equals (rule 3) some element; an
 *    element that is a MISSING path matches nothing. `x in context.list` is false
 *    when the value is not an array.
 * 6. Functions. `startsWith`, `endsWith`: both arguments strings, else false.
 *    `contains(s, t)`: substring when both are strings; membership (rule 5) when
 *    the first is an array; else false. `matches(s, glob)`: both strings, `*` in
 *    the glob matches any run of characters (linear-time matcher).
 * 7. Booleans. `&&` and `||` short-circuit left to right. An operand that is not
 *    a boolean at run time counts as false: a bare path used as a condition
 *    (`context.is_vip`) is true only when its value is exactly `true`. `!` negates
 *    that boolean, so `!context.is_vip` is true when the key is missing.
 * 8. A comparison whose operand is itself a comparison or call uses its boolean
 *    result as the value (`(amount > 5) == context.flag`).
 * 9. Arithmetic. `+ - * /` on two numbers; an operand that is not a number
 *    (MISSING included) or a result that is not finite (a division by zero)
 *    gives MISSING, so the comparison that reads it is false.
 * 10. History. `history.count|sum|denied(...)` is the value the request's
 *    `history` provider gives for the call's probe (condition/history.ts);
 *    MISSING when the request has no provider or the provider gives null.
 *    `history.exists(...)` is true when that count is above 0 (false when
 *    unknown). `session.labels` is the request's `session_labels` (an empty
 *    list when absent).
 *
 * `compileCondition` expects a checked AST (see check.ts); a structurally broken
 * AST (unknown node kind, wrong arity) throws an Error here, since no closure
 * could decide it safely.
 */
import { compileGlob, globMatches, type CompiledGlob } from '../patterns/glob.js';
import type { EvaluationInput } from '../policy/types.js';
import type { HistoryProbe } from '../history/probe.js';
import {
  FORBIDDEN_FIELDS,
  type ArithNode,
  type CallNode,
  type CompareNode,
  type ConditionAst,
  type HistoryNode,
  type PathNode,
} from './ast.js';
import { probeOf } from './history.js';

type Value = (input: EvaluationInput) => unknown;
export type Test = (input: EvaluationInput) => boolean;

/** Deep-equality recursion bound (rule 3). */
const MAX_EQUAL_DEPTH = 64;
/** Above this many literal elements, `in [...]` uses a Set. */
const SET_THRESHOLD = 8;

const NO_LABELS: readonly string[] = Object.freeze([]);
const TRUE: Test = () => true;
const FALSE: Test = () => false;

/** Prototype null, or a prototype whose own prototype is null (Object.prototype of any realm). */
function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as object | null;
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Rule 1: own property `s` of `v` when `v` is a plain object, else undefined.
 * Ordered for the hot path: one keyed load for a miss; for a hit, `Object.hasOwn`
 * and a `constructor === Object` test, with the exact prototype test only for
 * objects that fail it (null prototype, own `constructor` key, other realm).
 */
function ownField(v: unknown, s: string): unknown {
  if (typeof v !== 'object' || v === null) return undefined;
  const x = (v as Record<string, unknown>)[s];
  if (x === undefined || !Object.hasOwn(v, s)) return undefined;
  return (v as { constructor?: unknown }).constructor === Object || isPlainRecord(v) ? x : undefined;
}

/**
 * Rule 3: deep equality of JSON values (arrays in order, objects by their own
 * keys; a value nested deeper than the limit is never equal).
 *
 * @param a - a JSON value.
 * @param b - another.
 * @returns whether they are equal.
 *
 * @example
 * ```ts
 * import { jsonEqual } from 'agent-authz/compiler';
 *
 * console.log(jsonEqual({ a: [1, 2] }, { a: [1, 2] }), jsonEqual({ a: 1 }, { a: '1' })); // => true false
 * ```
 */
export function jsonEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth >= MAX_EQUAL_DEPTH)
    return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let k = 0; k < a.length; k++) if (!jsonEqual(a[k], b[k], depth + 1)) return false;
    return true;
  }
  if (Array.isArray(b) || !isPlainRecord(a) || !isPlainRecord(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !jsonEqual(a[key], b[key], depth + 1)) return false;
  }
  return true;
}

/**
 * The value at `segments` under `base`, walked as rule 1 walks `context.a.b`
 * (own properties of plain objects only); undefined when MISSING.
 */
export function readField(base: unknown, segments: readonly string[]): unknown {
  let v: unknown = base === null ? undefined : base;
  for (let k = 0; k < segments.length && v !== undefined; k++)
    v = FORBIDDEN_FIELDS.has(segments[k]!) ? undefined : ownField(v, segments[k]!);
  return v;
}

/** The object a dotted path walks: the request's context, or the agent's stored attributes. */
type Base = (input: EvaluationInput) => Record<string, unknown> | null | undefined;
const contextOf: Base = (input) => input.context;
const attributesOf: Base = (input) => input.agent_attributes;

function fieldGetter(base: Base, segments: readonly string[]): Value {
  if (segments.some((s) => typeof s !== 'string' || FORBIDDEN_FIELDS.has(s))) return () => undefined;
  const n = segments.length;
  if (n === 0) {
    return (input) => {
      const c = base(input);
      return c === null ? undefined : c;
    };
  }
  if (n === 1) {
    const s0 = segments[0]!;
    return (input) => ownField(base(input), s0);
  }
  if (n === 2) {
    const s0 = segments[0]!;
    const s1 = segments[1]!;
    return (input) => ownField(ownField(base(input), s0), s1);
  }
  const segs = [...segments];
  return (input) => {
    let v: unknown = base(input);
    for (let k = 0; k < n && v !== undefined; k++) v = ownField(v, segs[k]!);
    return v;
  };
}

function pathGetter(node: PathNode): Value {
  switch (node.root) {
    case 'agent_id':
      return (input) => input.agent_id;
    case 'action':
      return (input) => input.action;
    case 'resource':
      return (input) => {
        const r = input.resource;
        return r === null ? undefined : r;
      };
    case 'amount':
      return (input) => {
        const a = input.amount;
        return a === null ? undefined : a;
      };
    case 'session_id':
      return (input) => input.session_id ?? undefined;
    case 'on_behalf_of':
      return (input) => input.on_behalf_of ?? undefined;
    case 'context':
      return fieldGetter(contextOf, node.segments);
    case 'agent':
      // `agent.attributes.a.b`: the fields after `attributes` walk the agent's attributes (rule 1).
      if (node.segments[0] !== 'attributes')
        throw new Error('compileCondition: agent is read only as agent.attributes');
      return fieldGetter(attributesOf, node.segments.slice(1));
    case 'session':
      // `session.labels` (rule 10): the session's labels, none when the request gives none.
      if (node.segments.length !== 1 || node.segments[0] !== 'labels')
        throw new Error('compileCondition: session is read only as session.labels');
      return (input) => input.session_labels ?? NO_LABELS;
    default:
      throw new Error(`compileCondition: unknown name ${JSON.stringify(node.root)}`);
  }
}

function isScalarLiteral(
  node: ConditionAst,
): node is ConditionAst & { kind: 'literal'; value: string | number | boolean } {
  return node.kind === 'literal' && node.value !== null;
}

/** A node as a value producer (undefined = MISSING). */
function value(node: ConditionAst): Value {
  switch (node.kind) {
    case 'literal': {
      const v = node.value;
      return () => v;
    }
    case 'path':
      return pathGetter(node);
    case 'list': {
      if (node.items.every((item) => item.kind === 'literal')) {
        const constant = Object.freeze(node.items.map((item) => (item as { value: unknown }).value));
        return () => constant;
      }
      const items = node.items.map(value);
      const n = items.length;
      return (input) => {
        const out = new Array<unknown>(n);
        for (let k = 0; k < n; k++) {
          const v = items[k]!(input);
          if (v === undefined) return undefined;
          out[k] = v;
        }
        return out;
      };
    }
    case 'arith':
      return arith(node);
    case 'history':
      return node.fn === 'exists' ? test(node) : historyValue(probeOf(node));
    default:
      return test(node);
  }
}

/** Rule 10: the provider's value of a probe, MISSING when unknown. */
function historyValue(probe: HistoryProbe): Value {
  return (input) => {
    const values = input.history;
    if (values === undefined || values === null) return undefined;
    const v = values(probe);
    return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
  };
}

const ARITH = {
  '+': (a: number, b: number) => a + b,
  '-': (a: number, b: number) => a - b,
  '*': (a: number, b: number) => a * b,
  '/': (a: number, b: number) => a / b,
} as const;

/** Rule 9: two numbers, a finite result, else MISSING. */
function arith(node: ArithNode): Value {
  if (!Object.hasOwn(ARITH, node.op)) throw new Error(`compileCondition: unknown operator ${JSON.stringify(node.op)}`);
  const op = ARITH[node.op];
  const L = value(node.left);
  const R = value(node.right);
  return (input) => {
    const a = L(input);
    if (typeof a !== 'number') return undefined;
    const b = R(input);
    if (typeof b !== 'number') return undefined;
    const r = op(a, b);
    return Number.isFinite(r) ? r : undefined;
  };
}

/** `history.exists(...)`: the count above 0. */
function historyExists(node: HistoryNode): Test {
  const count = historyValue(probeOf(node));
  return (input) => {
    const v = count(input);
    return v !== undefined && (v as number) > 0;
  };
}

/** A node as a condition (rule 7: non-booleans count as false). */
export function test(node: ConditionAst): Test {
  switch (node.kind) {
    case 'literal':
      return node.value === true ? TRUE : FALSE;
    case 'path': {
      const get = pathGetter(node);
      return (input) => get(input) === true;
    }
    case 'list':
      return FALSE;
    case 'not': {
      const inner = test(node.operand);
      return (input) => !inner(input);
    }
    case 'and':
    case 'or':
      return logical(node.kind, node.operands.map(test));
    case 'compare':
      return compare(node);
    case 'call':
      return call(node);
    case 'arith':
      return FALSE;
    case 'history':
      return node.fn === 'exists' ? historyExists(node) : FALSE;
    default:
      throw new Error(
        `compileCondition: not a condition node (kind ${JSON.stringify((node as { kind?: unknown }).kind)})`,
      );
  }
}

function logical(kind: 'and' | 'or', parts: Test[]): Test {
  const n = parts.length;
  if (kind === 'and') {
    if (n === 2) {
      const [a, b] = parts as [Test, Test];
      return (input) => a(input) && b(input);
    }
    return (input) => {
      for (let k = 0; k < n; k++) if (!parts[k]!(input)) return false;
      return true;
    };
  }
  if (n === 2) {
    const [a, b] = parts as [Test, Test];
    return (input) => a(input) || b(input);
  }
  return (input) => {
    for (let k = 0; k < n; k++) if (parts[k]!(input)) return true;
    return false;
  };
}

const ORDER = {
  '<': (a: number | string, b: number | string) => a < b,
  '<=': (a: number | string, b: number | string) => a <= b,
  '>': (a: number | string, b: number | string) => a > b,
  '>=': (a: number | string, b: number | string) => a >= b,
} as const;

function compare(node: CompareNode): Test {
  const { op, left, right } = node;
  if (op === 'in') return membership(value(left), right);
  if (op === '==' || op === '!=') return equality(op === '==', left, right);
  if (!Object.hasOwn(ORDER, op)) throw new Error(`compileCondition: unknown operator ${JSON.stringify(op)}`);
  const L = value(left);
  if (right.kind === 'literal' && typeof right.value === 'number') {
    const k = right.value;
    switch (op) {
      case '<':
        return (input) => {
          const a = L(input);
          return typeof a === 'number' && a < k;
        };
      case '<=':
        return (input) => {
          const a = L(input);
          return typeof a === 'number' && a <= k;
        };
      case '>':
        return (input) => {
          const a = L(input);
          return typeof a === 'number' && a > k;
        };
      case '>=':
        return (input) => {
          const a = L(input);
          return typeof a === 'number' && a >= k;
        };
    }
  }
  const R = value(right);
  const cmp = ORDER[op];
  return (input) => {
    const a = L(input);
    const ta = typeof a;
    if (ta !== 'number' && ta !== 'string') return false;
    const b = R(input);
    return typeof b === ta && cmp(a as number | string, b as number | string);
  };
}

function equality(eq: boolean, left: ConditionAst, right: ConditionAst): Test {
  const leftNull = left.kind === 'literal' && left.value === null;
  const rightNull = right.kind === 'literal' && right.value === null;
  if (leftNull || rightNull) {
    // Rule 2's exception: explicit null checks.
    const get = value(leftNull ? right : left);
    return eq
      ? (input) => {
          const v = get(input);
          return v === undefined || v === null;
        }
      : (input) => {
          const v = get(input);
          return v !== undefined && v !== null;
        };
  }
  const lit = isScalarLiteral(right) ? right : isScalarLiteral(left) ? left : undefined;
  if (lit) {
    const k = lit.value;
    const get = value(lit === right ? left : right);
    return eq
      ? (input) => get(input) === k
      : (input) => {
          const v = get(input);
          return v !== undefined && v !== k;
        };
  }
  const L = value(left);
  const R = value(right);
  return (input) => {
    const a = L(input);
    if (a === undefined) return false;
    const b = R(input);
    return b !== undefined && jsonEqual(a, b) === eq;
  };
}

/** Rule 5: `subject in list`. */
function membership(subject: Value, list: ConditionAst): Test {
  if (list.kind === 'list') {
    if (list.items.length === 0) return FALSE;
    if (list.items.every((item) => item.kind === 'literal')) {
      const constants = list.items.map((item) => (item as { value: unknown }).value);
      if (constants.length > SET_THRESHOLD) {
        const set = new Set(constants);
        return (input) => set.has(subject(input));
      }
      const n = constants.length;
      return (input) => {
        const a = subject(input);
        if (a === undefined) return false;
        for (let k = 0; k < n; k++) if (constants[k] === a) return true;
        return false;
      };
    }
    const items = list.items.map(value);
    const n = items.length;
    return (input) => {
      const a = subject(input);
      if (a === undefined) return false;
      for (let k = 0; k < n; k++) {
        const b = items[k]!(input);
        if (b !== undefined && jsonEqual(a, b)) return true;
      }
      return false;
    };
  }
  const get = value(list);
  return (input) => {
    const a = subject(input);
    if (a === undefined) return false;
    const b = get(input);
    return Array.isArray(b) && arrayIncludes(b, a);
  };
}

function arrayIncludes(array: readonly unknown[], a: unknown): boolean {
  for (let k = 0; k < array.length; k++) if (jsonEqual(a, array[k])) return true;
  return false;
}

function call(node: CallNode): Test {
  const args = node.args;
  if (!Array.isArray(args) || args.length !== 2) throw new Error(`compileCondition: ${node.fn} needs 2 arguments`);
  const [first, second] = args as [ConditionAst, ConditionAst];
  switch (node.fn) {
    case 'startsWith':
    case 'endsWith': {
      const starts = node.fn === 'startsWith';
      const S = value(first);
      if (second.kind === 'literal' && typeof second.value === 'string') {
        const k = second.value;
        return starts
          ? (input) => {
              const s = S(input);
              return typeof s === 'string' && s.startsWith(k);
            }
          : (input) => {
              const s = S(input);
              return typeof s === 'string' && s.endsWith(k);
            };
      }
      const P = value(second);
      return (input) => {
        const s = S(input);
        if (typeof s !== 'string') return false;
        const p = P(input);
        return typeof p === 'string' && (starts ? s.startsWith(p) : s.endsWith(p));
      };
    }
    case 'contains': {
      if (first.kind === 'list') return membership(value(second), first);
      const A = value(first);
      const B = value(second);
      return (input) => {
        const a = A(input);
        if (typeof a === 'string') {
          const b = B(input);
          return typeof b === 'string' && a.includes(b);
        }
        if (!Array.isArray(a)) return false;
        const b = B(input);
        return b !== undefined && arrayIncludes(a, b);
      };
    }
    case 'matches': {
      const S = value(first);
      if (second.kind === 'literal' && typeof second.value === 'string') {
        const glob = compileGlob(second.value);
        return (input) => {
          const s = S(input);
          return typeof s === 'string' && globMatches(glob, s);
        };
      }
      const G = value(second);
      let cached: CompiledGlob | undefined;
      return (input) => {
        const s = S(input);
        if (typeof s !== 'string') return false;
        const g = G(input);
        if (typeof g !== 'string') return false;
        if (cached === undefined || cached.source !== g) cached = compileGlob(g);
        return globMatches(cached, s);
      };
    }
    default:
      throw new Error(`compileCondition: unknown function ${JSON.stringify(node.fn)}`);
  }
}

/**
 * The condition as a closure over a decision request, with the semantics above
 * (a missing value makes a comparison false; non-booleans count as false). No
 * `eval`; calling it never throws for any request.
 *
 * @param ast - an AST from {@link parseCondition} that {@link checkCondition} found no issue in.
 * @returns `(request) => boolean`.
 * @throws Error when the AST is structurally broken (not one parseCondition made).
 *
 * @example
 * ```ts
 * import { compileCondition, parseCondition } from 'agent-authz/compiler';
 *
 * const holds = compileCondition(parseCondition("amount <= 50 && context.channel == 'chat'").ast);
 * const request = { agent_id: 'support-bot-1', action: 'payments.refund', amount: 20, context: { channel: 'chat' } };
 * console.log(holds(request), holds({ ...request, amount: 80 }), holds({ ...request, context: null })); // => true false false
 * ```
 */
export function compileCondition(ast: ConditionAst): (input: EvaluationInput) => boolean {
  return test(ast);
}
