/**
 * Static type check of a condition AST. Types: number, string, bool, null, list,
 * unknown (context and agent.attributes paths: any JSON value), `string|null` (resource) and
 * `number|null` (amount). An operand of type unknown is always accepted; errors
 * are reported only when the known types can never work together:
 *
 * - `&&`, `||`, `!` and the whole condition need bool (or unknown);
 * - `==` / `!=` need types that share a value (`amount == null` is fine,
 *   `amount == 'x'` and `agent_id == null` are not);
 * - `<` `<=` `>` `>=` need two numbers or two strings (nullable ones included:
 *   a missing value just makes the comparison false); never null, bool or list;
 * - `x in y` needs y to be a list (or unknown), and each element of a list
 *   literal must be able to equal x;
 * - `startsWith`, `endsWith`, `matches` need strings; `contains` needs a string
 *   and a string, or a list and anything;
 * - `+ - * /` need two numbers (nullable ones included: a missing value, or a
 *   division by zero, makes the comparison that reads the result false);
 * - history calls take literal arguments (condition/history.ts); `history.exists`
 *   is a boolean, the others numbers; `session.labels` is a list.
 *
 * The checker also re-validates names, functions and arity (so an AST read back
 * from a file is checked fully) and bounds its own recursion.
 */
import {
  EXPECTED_NAMES,
  FIELD_NAME,
  FIELD_ROOTS,
  FORBIDDEN_FIELDS,
  FUNCTION_ARITY,
  issueAt,
  PATH_ROOTS,
  rootPathProblem,
  type ConditionAst,
  type ConditionIssue,
  type ConditionType,
  type FunctionName,
  type SourcePos,
} from './ast.js';
import { historyIssues } from './history.js';
import { printCondition } from './print.js';

/** Deeper ASTs than this are rejected (the parser cannot produce them). */
export const MAX_AST_DEPTH = 512;

const PATH_TYPES: Record<string, ConditionType> = {
  agent_id: 'string',
  action: 'string',
  resource: 'string|null',
  amount: 'number|null',
  session_id: 'string|null',
  on_behalf_of: 'string|null',
  context: 'unknown',
  agent: 'unknown',
  session: 'list',
};
const ROOTS: ReadonlySet<string> = new Set(PATH_ROOTS);
const COMPARE_OPS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=', 'in']);
const ARITH_OPS: ReadonlySet<string> = new Set(['+', '-', '*', '/']);

type Base = 'number' | 'string' | 'bool' | 'null' | 'list';
const MEMBERS: Record<Exclude<ConditionType, 'unknown'>, readonly Base[]> = {
  number: ['number'],
  string: ['string'],
  bool: ['bool'],
  null: ['null'],
  list: ['list'],
  'number|null': ['number', 'null'],
  'string|null': ['string', 'null'],
};

const TYPE_WORDS: Record<ConditionType, string> = {
  number: 'a number',
  string: 'a string',
  bool: 'a boolean',
  null: 'null',
  list: 'a list',
  unknown: 'a context value',
  'number|null': 'a number (or missing)',
  'string|null': 'a string (or missing)',
};

/** Whether a value of type a can ever equal one of type b. */
export function canEqual(a: ConditionType, b: ConditionType): boolean {
  if (a === 'unknown' || b === 'unknown') return true;
  return MEMBERS[a].some((m) => MEMBERS[b].includes(m));
}

/** number / string for types that may be ordered, unknown, or undefined when never orderable. */
function orderFamily(t: ConditionType): 'number' | 'string' | 'unknown' | undefined {
  if (t === 'number' || t === 'number|null') return 'number';
  if (t === 'string' || t === 'string|null') return 'string';
  return t === 'unknown' ? 'unknown' : undefined;
}

const isStringish = (t: ConditionType) => t === 'string' || t === 'string|null' || t === 'unknown';
const isBoolish = (t: ConditionType) => t === 'bool' || t === 'unknown';
const isNumberish = (t: ConditionType) => t === 'number' || t === 'number|null' || t === 'unknown';

function snippet(node: ConditionAst): string {
  let text: string;
  try {
    text = printCondition(node);
  } catch {
    text = '?';
  }
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function posOf(node: unknown): SourcePos {
  const pos = (node as { pos?: Partial<SourcePos> } | null)?.pos;
  if (pos && typeof pos.offset === 'number' && typeof pos.line === 'number' && typeof pos.col === 'number') {
    return { offset: pos.offset, line: pos.line, col: pos.col };
  }
  return { offset: 0, line: 1, col: 1 };
}

class Checker {
  readonly issues: ConditionIssue[] = [];
  private tooDeep = false;

  private error(code: string, message: string, node: unknown, pos = posOf(node)): void {
    this.issues.push(issueAt(code, message, pos));
  }

  private describe(node: ConditionAst, t: ConditionType): string {
    return `${snippet(node)} is ${TYPE_WORDS[t]}`;
  }

  typeOf(node: ConditionAst, depth: number): ConditionType {
    if (depth > MAX_AST_DEPTH) {
      if (!this.tooDeep)
        this.error('condition.too_deep', `condition is nested more than ${MAX_AST_DEPTH} levels deep`, node);
      this.tooDeep = true;
      return 'unknown';
    }
    if (node === null || typeof node !== 'object') {
      this.error('condition.type', 'not a condition node', node);
      return 'unknown';
    }
    const d = depth + 1;
    switch (node.kind) {
      case 'literal': {
        const v: unknown = node.value;
        if (v === null) return 'null';
        if (typeof v === 'number' && Number.isFinite(v)) return 'number';
        if (typeof v === 'string') return 'string';
        if (typeof v === 'boolean') return 'bool';
        this.error('condition.type', 'a literal must be a finite number, a string, true, false or null', node);
        return 'unknown';
      }
      case 'path':
        return this.path(node);
      case 'list':
        if (!Array.isArray(node.items)) {
          this.error('condition.type', 'a list needs items', node);
          return 'list';
        }
        for (const item of node.items) {
          if (item?.kind !== 'literal' && item?.kind !== 'path')
            this.error('condition.type', 'list elements must be literals or paths', item ?? node);
          else this.typeOf(item, d);
        }
        return 'list';
      case 'not': {
        const t = this.typeOf(node.operand, d);
        if (!isBoolish(t))
          this.error('condition.type', `'!' needs a boolean, but ${this.describe(node.operand, t)}`, node.operand);
        return 'bool';
      }
      case 'and':
      case 'or': {
        const op = node.kind === 'and' ? '&&' : '||';
        if (!Array.isArray(node.operands) || node.operands.length < 2) {
          this.error('condition.type', `'${op}' needs at least two operands`, node);
          return 'bool';
        }
        for (const operand of node.operands) {
          const t = this.typeOf(operand, d);
          if (!isBoolish(t))
            this.error('condition.type', `'${op}' needs booleans, but ${this.describe(operand, t)}`, operand);
        }
        return 'bool';
      }
      case 'compare':
        this.compare(node, d);
        return 'bool';
      case 'call':
        this.call(node, d);
        return 'bool';
      case 'arith':
        return this.arith(node, d);
      case 'history': {
        const issues = historyIssues(node);
        this.issues.push(...issues);
        return node.fn === 'exists' ? 'bool' : 'number|null';
      }
      default:
        this.error(
          'condition.type',
          `not a condition node (kind ${JSON.stringify((node as { kind?: unknown }).kind)})`,
          node,
        );
        return 'unknown';
    }
  }

  private path(node: Extract<ConditionAst, { kind: 'path' }>): ConditionType {
    const root: unknown = node.root;
    const segments: unknown = node.segments;
    if (typeof root !== 'string' || !ROOTS.has(root)) {
      this.error('condition.unknown_name', `unknown name '${String(root)}'; expected ${EXPECTED_NAMES}`, node);
      return 'unknown';
    }
    if (!Array.isArray(segments)) {
      this.error('condition.unknown_name', `path ${root} needs a list of field names`, node);
      return 'unknown';
    }
    if (!FIELD_ROOTS.has(root) && segments.length > 0) {
      this.error(
        'condition.unknown_name',
        `${root} has no fields (only context.…, agent.attributes.… and session.labels paths have dotted fields)`,
        node,
      );
    }
    const agentProblem = rootPathProblem(root, segments);
    if (agentProblem) this.error('condition.unknown_name', agentProblem.message, node);
    for (const s of segments) {
      if (typeof s !== 'string' || !FIELD_NAME.test(s) || FORBIDDEN_FIELDS.has(s)) {
        this.error('condition.unknown_name', `'${String(s)}' cannot be used as a context field name`, node);
      }
    }
    return PATH_TYPES[root]!;
  }

  private compare(node: Extract<ConditionAst, { kind: 'compare' }>, d: number): void {
    const { op } = node;
    const at = node.opPos ? posOf({ pos: node.opPos }) : posOf(node);
    if (!COMPARE_OPS.has(op)) {
      this.error('condition.type', `unknown comparison operator ${JSON.stringify(op)}`, node, at);
      return;
    }
    const lt = this.typeOf(node.left, d);
    const rt = this.typeOf(node.right, d);
    if (op === '==' || op === '!=') {
      if (!canEqual(lt, rt)) {
        this.error(
          'condition.type',
          `'${op}' compares values that can never be equal: ${this.describe(node.left, lt)} and ${this.describe(node.right, rt)}`,
          node,
          at,
        );
      }
      return;
    }
    if (op === 'in') {
      if (rt !== 'list' && rt !== 'unknown') {
        const hint = isStringish(rt) ? ' (use contains(text, part) for substrings)' : '';
        this.error(
          'condition.type',
          `'in' needs a list on its right, but ${this.describe(node.right, rt)}${hint}`,
          node.right,
        );
        return;
      }
      this.elementsCanEqual(node.right, lt, node.left, d);
      return;
    }
    const lf = orderFamily(lt);
    const rf = orderFamily(rt);
    const bad = lf === undefined ? node.left : rf === undefined ? node.right : undefined;
    if (bad) {
      const t = bad === node.left ? lt : rt;
      this.error('condition.type', `'${op}' needs two numbers or two strings, but ${this.describe(bad, t)}`, bad);
    } else if (lf !== 'unknown' && rf !== 'unknown' && lf !== rf) {
      this.error(
        'condition.type',
        `'${op}' needs two numbers or two strings, but ${this.describe(node.left, lt)} and ${this.describe(node.right, rt)}`,
        node,
        at,
      );
    }
  }

  /** `+ - * /`: two numbers; the result may be missing (a missing operand, a division by zero). */
  private arith(node: Extract<ConditionAst, { kind: 'arith' }>, d: number): ConditionType {
    const at = node.opPos ? posOf({ pos: node.opPos }) : posOf(node);
    if (!ARITH_OPS.has(node.op)) {
      this.error('condition.type', `unknown arithmetic operator ${JSON.stringify(node.op)}`, node, at);
      return 'unknown';
    }
    const lt = this.typeOf(node.left, d);
    const rt = this.typeOf(node.right, d);
    for (const [side, t] of [
      [node.left, lt],
      [node.right, rt],
    ] as const) {
      if (!isNumberish(t))
        this.error('condition.type', `'${node.op}' needs two numbers, but ${this.describe(side, t)}`, side);
    }
    return lt === 'number' && rt === 'number' && node.op !== '/' ? 'number' : 'number|null';
  }

  /** For a list literal: every element must be able to equal a value of type `t`. */
  private elementsCanEqual(list: ConditionAst, t: ConditionType, subject: ConditionAst, d: number): void {
    if (list.kind !== 'list' || !Array.isArray(list.items) || t === 'unknown') return;
    for (const item of list.items) {
      if (item?.kind !== 'literal' && item?.kind !== 'path') continue;
      const it = this.typeOfQuiet(item, d);
      if (!canEqual(t, it)) {
        this.error(
          'condition.type',
          `list element ${this.describe(item, it)}, which can never equal ${snippet(subject)} (${TYPE_WORDS[t]})`,
          item,
        );
      }
    }
  }

  /** Type of a node already checked elsewhere, without reporting its problems again. */
  private typeOfQuiet(node: ConditionAst, d: number): ConditionType {
    const before = this.issues.length;
    const t = this.typeOf(node, d);
    this.issues.length = before;
    return t;
  }

  private call(node: Extract<ConditionAst, { kind: 'call' }>, d: number): void {
    const fn: unknown = node.fn;
    if (typeof fn !== 'string' || !Object.hasOwn(FUNCTION_ARITY, fn)) {
      this.error(
        'condition.unknown_function',
        `unknown function '${String(fn)}'; expected startsWith, endsWith, contains or matches`,
        node,
      );
      return;
    }
    const args = Array.isArray(node.args) ? node.args : [];
    const types = args.map((a) => this.typeOf(a, d));
    const arity = FUNCTION_ARITY[fn as FunctionName];
    if (args.length !== arity) {
      this.error('condition.arity', `${fn} takes ${arity} arguments but got ${args.length}`, node);
      return;
    }
    const [first, second] = args as [ConditionAst, ConditionAst];
    const [ft, st] = types as [ConditionType, ConditionType];
    const argError = (which: 'first' | 'second', arg: ConditionAst, t: ConditionType, wanted: string) =>
      this.error('condition.type', `${fn} needs ${wanted} as its ${which} argument, but ${this.describe(arg, t)}`, arg);
    if (fn === 'contains') {
      if (ft === 'list') this.elementsCanEqual(first, st, second, d);
      else if (!isStringish(ft)) argError('first', first, ft, 'a string or a list');
      else if (ft !== 'unknown' && !isStringish(st)) argError('second', second, st, 'a string (the first is a string)');
      return;
    }
    if (!isStringish(ft)) argError('first', first, ft, 'a string');
    if (!isStringish(st)) argError('second', second, st, fn === 'matches' ? 'a string (a glob)' : 'a string');
  }
}

/**
 * Type-checks a parsed condition: comparisons of values that can never be equal
 * or ordered, function arguments of the wrong type, a condition that is not a
 * boolean. Never throws.
 *
 * @param ast - an AST from {@link parseCondition}.
 * @returns the `condition.type` issues; `[]` when the condition is fine.
 *
 * @example
 * ```ts
 * import { checkCondition, parseCondition } from 'agent-authz/compiler';
 *
 * console.log(checkCondition(parseCondition('amount <= 50').ast).length); // => 0
 * const [issue] = checkCondition(parseCondition("amount == 'ten'").ast);
 * console.log(issue.code, issue.col); // => condition.type 8
 * ```
 */
export function checkCondition(ast: ConditionAst): ConditionIssue[] {
  const checker = new Checker();
  const t = checker.typeOf(ast, 0);
  if (!isBoolish(t)) {
    checker.issues.push(
      issueAt(
        'condition.type',
        `a condition must be true or false, but ${snippet(ast)} is ${TYPE_WORDS[t]}`,
        posOf(ast),
      ),
    );
  }
  return checker.issues;
}

/** The static type of an expression (after `checkCondition` found no errors). */
export function conditionType(ast: ConditionAst): ConditionType {
  return new Checker().typeOf(ast, 0);
}
