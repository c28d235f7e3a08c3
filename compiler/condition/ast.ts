/**
 * The typed AST of a condition, and `parseCondition`, which lexes, bounds the
 * nesting, parses with the shared chevrotain parser and builds the AST with a CST
 * visitor. The AST is made of plain JSON-serialisable objects (it is stored in
 * compiled bundles); every node records where it starts in the condition text.
 *
 * Problems are returned, never thrown. The AST is returned only when there are no
 * issues: syntax, limits, unknown names, unknown functions, arity. Types are
 * checked separately (check.ts).
 */
import { EOF, type CstNode, type IToken } from 'chevrotain';
import { HISTORY_FUNCTIONS, type HistoryFunction } from '../history/probe.js';
import { describeLexError, tokenize } from './lexer.js';
import { conditionParser, MAX_DEPTH, nestingViolation, notAllInputMessage } from './parser.js';

/** Longest accepted condition text, in UTF-16 code units. */
export const MAX_LENGTH = 4096;

export interface SourcePos {
  /** 0-based offset into the condition text. */
  offset: number;
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units. */
  col: number;
}

export interface ConditionIssue {
  code: string;
  message: string;
  offset: number;
  line: number;
  col: number;
}

/** Static types: `unknown` is any JSON value (context paths). */
export type ConditionType = 'number' | 'string' | 'bool' | 'null' | 'list' | 'unknown' | 'string|null' | 'number|null';

export type PathRoot =
  'agent_id' | 'action' | 'resource' | 'amount' | 'session_id' | 'on_behalf_of' | 'context' | 'agent' | 'session';
export type FunctionName = 'startsWith' | 'endsWith' | 'contains' | 'matches';
export type CompareOperator = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in';
export type ArithOperator = '+' | '-' | '*' | '/';
export type LiteralValue = string | number | boolean | null;

export const PATH_ROOTS: readonly PathRoot[] = [
  'agent_id',
  'action',
  'resource',
  'amount',
  'session_id',
  'on_behalf_of',
  'context',
  'agent',
  'session',
];
/** Roots whose paths have dotted fields: `context.…`, `agent.attributes.…` and `session.labels`. */
export const FIELD_ROOTS: ReadonlySet<string> = new Set(['context', 'agent', 'session']);
/** What the parser and the checker say for an unknown name. */
export const EXPECTED_NAMES =
  'agent_id, action, resource, amount, session_id, on_behalf_of, context.…, agent.attributes.…, session.labels or history.count|sum|exists|denied(...)';
/** The message for `history` read as a value. */
export const HISTORY_AS_VALUE =
  'history is read through its functions: history.count(...), history.sum(...), history.exists(...) or history.denied(...)';

/**
 * The rule of `agent`: it is read only as `agent.attributes` and the fields
 * below it (the agent's stored attributes). The message for a path that breaks
 * it and the index of the offending segment (-1: the root), or undefined.
 *
 * @example
 * agentPathProblem(['attributes', 'roles']); // => undefined
 * agentPathProblem(['status']);              // => { index: 0, message: "agent has only attributes: write agent.attributes.…" }
 */
export function agentPathProblem(segments: readonly unknown[]): { index: number; message: string } | undefined {
  if (segments[0] === 'attributes') return undefined;
  return { index: segments.length === 0 ? -1 : 0, message: 'agent has only attributes: write agent.attributes.…' };
}
/**
 * The rule of `session`: it is read only as `session.labels` (the session's
 * labels, a list). The message for a path that breaks it, or undefined.
 *
 * @example
 * sessionPathProblem(['labels']); // => undefined
 */
export function sessionPathProblem(segments: readonly unknown[]): { index: number; message: string } | undefined {
  if (segments.length === 1 && segments[0] === 'labels') return undefined;
  return {
    index: segments.length === 0 ? -1 : segments[0] === 'labels' ? 1 : 0,
    message: 'session has only labels: write session.labels (session_id is the session id)',
  };
}

/** The message for a path that breaks the rule of its root (`agent`, `session`), or undefined. */
export function rootPathProblem(
  root: string,
  segments: readonly unknown[],
): { index: number; message: string } | undefined {
  if (root === 'agent') return agentPathProblem(segments);
  if (root === 'session') return sessionPathProblem(segments);
  return undefined;
}

/** History functions take the actions and the window, then optionally the scope and the match fields. */
export const HISTORY_ARITY = { min: 2, max: 4 } as const;

/** The arity message of a history function. */
export function historyArityMessage(fn: string, got: number): string {
  return `history.${fn} takes 2 to 4 arguments (actions, window[, scope[, match]]) but got ${got}`;
}

/** Every function takes exactly this many arguments. */
export const FUNCTION_ARITY: Readonly<Record<FunctionName, number>> = {
  startsWith: 2,
  endsWith: 2,
  contains: 2,
  matches: 2,
};
export const FUNCTION_NAMES = Object.keys(FUNCTION_ARITY) as FunctionName[];
/** Context field names that are never walked (prototype pollution / confusion). */
export const FORBIDDEN_FIELDS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
/** What a context field name looks like (keywords included: `context.in` is fine). */
export const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface LiteralNode {
  kind: 'literal';
  value: LiteralValue;
  pos: SourcePos;
}
export interface PathNode {
  kind: 'path';
  root: PathRoot;
  /** Field names after `context`, or after `agent` (`attributes` first); always empty for other roots. */
  segments: string[];
  pos: SourcePos;
}
export interface ListNode {
  kind: 'list';
  items: Array<LiteralNode | PathNode>;
  pos: SourcePos;
}
export interface NotNode {
  kind: 'not';
  operand: ConditionAst;
  pos: SourcePos;
}
/** `a && b && c` is one node with three operands. */
export interface LogicalNode {
  kind: 'and' | 'or';
  operands: ConditionAst[];
  pos: SourcePos;
}
export interface CompareNode {
  kind: 'compare';
  op: CompareOperator;
  left: ConditionAst;
  right: ConditionAst;
  /** Start of the left operand. */
  pos: SourcePos;
  /** The operator. */
  opPos: SourcePos;
}
export interface CallNode {
  kind: 'call';
  fn: FunctionName;
  args: ConditionAst[];
  pos: SourcePos;
}
/** `a + b`, `a - b`, `a * b`, `a / b` on numbers; `a - b - c` is `(a - b) - c`. */
export interface ArithNode {
  kind: 'arith';
  op: ArithOperator;
  left: ConditionAst;
  right: ConditionAst;
  /** Start of the left operand. */
  pos: SourcePos;
  /** The operator. */
  opPos: SourcePos;
}
/**
 * `history.count|sum|exists|denied(ACTIONS, WINDOW[, SCOPE[, MATCH]])`: the
 * arguments as written (literals; check.ts checks them, condition/history.ts
 * makes the probe).
 */
export interface HistoryNode {
  kind: 'history';
  fn: HistoryFunction;
  args: ConditionAst[];
  pos: SourcePos;
}

export type ConditionAst =
  LiteralNode | PathNode | ListNode | NotNode | LogicalNode | CompareNode | CallNode | ArithNode | HistoryNode;

/**
 * The nodes of a condition that `keep` accepts, in source order (depth first):
 * the one walk over a condition's tree that its analyses share.
 *
 * @example
 * conditionNodes(parseCondition("contains(session.labels, 'private')").ast!, (n) => n.kind === 'path').length; // => 1
 */
export function conditionNodes<N extends ConditionAst>(
  ast: ConditionAst,
  keep: (node: ConditionAst) => node is N,
  out: N[] = [],
): N[] {
  if (keep(ast)) out.push(ast);
  switch (ast.kind) {
    case 'not':
      conditionNodes(ast.operand, keep, out);
      break;
    case 'and':
    case 'or':
      for (const o of ast.operands) conditionNodes(o, keep, out);
      break;
    case 'compare':
    case 'arith':
      conditionNodes(ast.left, keep, out);
      conditionNodes(ast.right, keep, out);
      break;
    case 'call':
      for (const a of ast.args) conditionNodes(a, keep, out);
      break;
    case 'list':
      for (const item of ast.items) conditionNodes(item, keep, out);
      break;
  }
  return out;
}

/** Whether a condition reads `session.labels` (the service reads a session's labels only for such rows). */
export function readsSessionLabels(ast: ConditionAst): boolean {
  return conditionNodes(ast, (n): n is PathNode => n.kind === 'path' && n.root === 'session').length > 0;
}

/** Maps offsets to 1-based line/col (line breaks: \n, \r\n, \r). */
export class LineMap {
  private readonly starts: number[] = [0];
  constructor(text: string) {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) this.starts.push(i + 1);
    }
  }
  pos(offset: number): SourcePos {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { offset, line: lo + 1, col: offset - this.starts[lo]! + 1 };
  }
}

export function issueAt(code: string, message: string, pos: SourcePos): ConditionIssue {
  return { code, message, offset: pos.offset, line: pos.line, col: pos.col };
}

// ---- CST shapes (labels from parser.ts) ----

interface OrCtx {
  operands: CstNode[];
}
interface NotCtx {
  nots?: IToken[];
  comparison: CstNode[];
}
interface ComparisonCtx {
  left: CstNode[];
  op?: IToken[];
  right?: CstNode[];
}
interface ArithCtx {
  operands: CstNode[];
  ops?: IToken[];
}
interface OperandCtx {
  literal?: CstNode[];
  list?: CstNode[];
  parenExpr?: CstNode[];
  pathOrCall?: CstNode[];
}
interface LiteralCtx {
  token: IToken[];
}
interface ListCtx {
  open: IToken[];
  items?: CstNode[];
}
interface ListItemCtx {
  literal?: CstNode[];
  path?: CstNode[];
}
interface ParenCtx {
  inner: CstNode[];
}
interface PathCtx {
  root: IToken[];
  segments?: IToken[];
}
interface PathOrCallCtx extends PathCtx {
  open?: IToken[];
  args?: CstNode[];
}

const ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t' };
const ROOTS: ReadonlySet<string> = new Set(PATH_ROOTS);
const HISTORY_FNS: ReadonlySet<string> = new Set(HISTORY_FUNCTIONS);
const HISTORY_FN_LIST = 'history.count, history.sum, history.exists or history.denied';

const BaseVisitor = conditionParser.getBaseCstVisitorConstructor<void, ConditionAst>();

class AstBuilder extends BaseVisitor {
  lines!: LineMap;
  issues: ConditionIssue[] = [];

  constructor() {
    super();
    this.validateVisitor();
  }

  private at(token: IToken): SourcePos {
    return this.lines.pos(token.startOffset);
  }

  private problem(code: string, message: string, pos: SourcePos): void {
    this.issues.push(issueAt(code, message, pos));
  }

  condition(ctx: { orExpr: CstNode[] }): ConditionAst {
    return this.visit(ctx.orExpr[0]!);
  }

  orExpr(ctx: OrCtx): ConditionAst {
    return this.logical('or', ctx);
  }

  andExpr(ctx: OrCtx): ConditionAst {
    return this.logical('and', ctx);
  }

  private logical(kind: 'and' | 'or', ctx: OrCtx): ConditionAst {
    const operands = ctx.operands.map((c) => this.visit(c) as ConditionAst);
    if (operands.length === 1) return operands[0]!;
    return { kind, operands, pos: operands[0]!.pos };
  }

  notExpr(ctx: NotCtx): ConditionAst {
    let node: ConditionAst = this.visit(ctx.comparison[0]!);
    const nots = ctx.nots ?? [];
    for (let i = nots.length - 1; i >= 0; i--) node = { kind: 'not', operand: node, pos: this.at(nots[i]!) };
    return node;
  }

  comparison(ctx: ComparisonCtx): ConditionAst {
    const left: ConditionAst = this.visit(ctx.left[0]!);
    if (!ctx.op || !ctx.right) return left;
    const right: ConditionAst = this.visit(ctx.right[0]!);
    const op = ctx.op[0]!;
    return { kind: 'compare', op: op.image as CompareOperator, left, right, pos: left.pos, opPos: this.at(op) };
  }

  sum(ctx: ArithCtx): ConditionAst {
    return this.arith(ctx);
  }

  product(ctx: ArithCtx): ConditionAst {
    return this.arith(ctx);
  }

  /** Left-associative: `a - b - c` is `(a - b) - c`. */
  private arith(ctx: ArithCtx): ConditionAst {
    let node: ConditionAst = this.visit(ctx.operands[0]!);
    const ops = ctx.ops ?? [];
    for (let i = 0; i < ops.length; i++) {
      const right: ConditionAst = this.visit(ctx.operands[i + 1]!);
      const op = ops[i]!;
      node = { kind: 'arith', op: op.image as ArithNode['op'], left: node, right, pos: node.pos, opPos: this.at(op) };
    }
    return node;
  }

  operand(ctx: OperandCtx): ConditionAst {
    const child = ctx.literal ?? ctx.list ?? ctx.parenExpr ?? ctx.pathOrCall;
    return this.visit(child![0]!);
  }

  parenExpr(ctx: ParenCtx): ConditionAst {
    return this.visit(ctx.inner[0]!);
  }

  literal(ctx: LiteralCtx): LiteralNode {
    const token = ctx.token[0]!;
    const pos = this.at(token);
    const image = token.image;
    switch (token.tokenType.name) {
      case 'True':
        return { kind: 'literal', value: true, pos };
      case 'False':
        return { kind: 'literal', value: false, pos };
      case 'Null':
        return { kind: 'literal', value: null, pos };
      case 'NumberLiteral': {
        let value = Number(image);
        if (!Number.isFinite(value)) this.problem('condition.syntax', `number ${image} is too large`, pos);
        if (Object.is(value, -0) || !Number.isFinite(value)) value = 0;
        return { kind: 'literal', value, pos };
      }
      default:
        return { kind: 'literal', value: this.unescape(token), pos };
    }
  }

  private unescape(token: IToken): string {
    const raw = token.image;
    let out = '';
    for (let i = 1; i < raw.length - 1; i++) {
      const c = raw[i]!;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const next = raw[i + 1]!;
      const decoded = ESCAPES[next];
      if (decoded === undefined) {
        this.problem(
          'condition.syntax',
          `unknown escape '\\${next}' in string (use \\\\, \\', \\", \\n or \\t)`,
          this.lines.pos(token.startOffset + i),
        );
      } else {
        out += decoded;
      }
      i++;
    }
    return out;
  }

  list(ctx: ListCtx): ListNode {
    const items = (ctx.items ?? []).map((c) => this.visit(c) as LiteralNode | PathNode);
    return { kind: 'list', items, pos: this.at(ctx.open[0]!) };
  }

  listItem(ctx: ListItemCtx): ConditionAst {
    return this.visit((ctx.literal ?? ctx.path)![0]!);
  }

  pathOrCall(ctx: PathOrCallCtx): ConditionAst {
    return ctx.open ? this.call(ctx) : this.path(ctx);
  }

  private call(ctx: PathOrCallCtx): CallNode | HistoryNode {
    const name = ctx.root[0]!;
    const pos = this.at(name);
    const args = (ctx.args ?? []).map((c) => this.visit(c) as ConditionAst);
    const segments = ctx.segments ?? [];
    if (segments.length > 0) return this.historyCall(name, segments, args);
    const fn = name.image;
    if (!Object.hasOwn(FUNCTION_ARITY, fn)) {
      const near = FUNCTION_NAMES.find((f) => f.toLowerCase() === fn.toLowerCase());
      this.problem(
        'condition.unknown_function',
        `unknown function '${fn}'${near ? ` (did you mean ${near}?)` : ''}; expected startsWith, endsWith, contains or matches`,
        pos,
      );
    } else if (args.length !== FUNCTION_ARITY[fn as FunctionName]) {
      const n = FUNCTION_ARITY[fn as FunctionName];
      this.problem('condition.arity', `${fn} takes ${n} arguments but got ${args.length}`, pos);
    }
    return { kind: 'call', fn: fn as FunctionName, args, pos };
  }

  /** `history.count(...)` and friends; any other dotted call is an unknown function. */
  private historyCall(root: IToken, segments: IToken[], args: ConditionAst[]): HistoryNode {
    const pos = this.at(root);
    const written = `${root.image}.${segments.map((t) => t.image).join('.')}`;
    const fn = segments[0]!.image;
    if (root.image !== 'history' || segments.length !== 1 || !HISTORY_FNS.has(fn)) {
      this.problem(
        'condition.unknown_function',
        `unknown function '${written}'; expected startsWith, endsWith, contains, matches, ${HISTORY_FN_LIST}`,
        pos,
      );
    } else if (args.length < HISTORY_ARITY.min || args.length > HISTORY_ARITY.max) {
      this.problem('condition.arity', historyArityMessage(fn, args.length), pos);
    }
    return { kind: 'history', fn: fn as HistoryFunction, args, pos };
  }

  path(ctx: PathCtx): PathNode {
    const root = ctx.root[0]!;
    const pos = this.at(root);
    const segments = (ctx.segments ?? []).map((t) => t.image);
    const agentProblem = rootPathProblem(root.image, segments);
    if (root.image === 'history') {
      this.problem('condition.unknown_name', HISTORY_AS_VALUE, pos);
    } else if (!ROOTS.has(root.image)) {
      this.problem('condition.unknown_name', `unknown name '${root.image}'; expected ${EXPECTED_NAMES}`, pos);
    } else if (!FIELD_ROOTS.has(root.image) && segments.length > 0) {
      this.problem(
        'condition.unknown_name',
        `${root.image} has no fields (only context.…, agent.attributes.… and session.labels paths have dotted fields)`,
        this.at(ctx.segments![0]!),
      );
    } else if (agentProblem) {
      this.problem(
        'condition.unknown_name',
        agentProblem.message,
        agentProblem.index < 0 ? pos : this.at(ctx.segments![agentProblem.index]!),
      );
    } else {
      for (const [i, segment] of segments.entries()) {
        if (FORBIDDEN_FIELDS.has(segment)) {
          this.problem(
            'condition.unknown_name',
            `'${segment}' cannot be used as a context field name`,
            this.at(ctx.segments![i]!),
          );
        }
      }
    }
    return { kind: 'path', root: root.image as PathRoot, segments, pos };
  }
}

const builder = new AstBuilder();

export interface ParseResult {
  ast?: ConditionAst;
  issues: ConditionIssue[];
}

/**
 * Parses a condition (the policy's `condition` text). Returns the AST when there
 * are no issues, otherwise the issues (`condition.syntax`, `condition.too_long`
 * beyond {@link MAX_LENGTH} characters, `condition.too_deep` beyond
 * {@link MAX_DEPTH} levels, unknown names and functions, arity), each with its
 * offset, line and column in the text. Never throws. Types are checked
 * separately by {@link checkCondition}.
 *
 * @param text - the condition, e.g. `amount <= 50 && context.channel == 'chat'`.
 * @returns `{ ast, issues: [] }`, or `{ issues }` without an AST.
 *
 * @example
 * ```ts
 * import { parseCondition } from 'agent-authz/compiler';
 *
 * console.log(parseCondition("amount <= 50 && context.channel == 'chat'").ast.kind); // => and
 * const { ast, issues } = parseCondition('amount <= ');
 * console.log(ast, issues[0].code, issues[0].col); // => undefined condition.syntax 11
 * ```
 */
export function parseCondition(text: string): ParseResult {
  if (typeof text !== 'string') {
    return { issues: [issueAt('condition.syntax', 'a condition must be a string', { offset: 0, line: 1, col: 1 })] };
  }
  const lines = new LineMap(text);
  if (text.length > MAX_LENGTH) {
    return {
      issues: [
        issueAt(
          'condition.too_long',
          `condition is ${text.length} characters long; the limit is ${MAX_LENGTH}`,
          lines.pos(MAX_LENGTH),
        ),
      ],
    };
  }
  const lexed = tokenize(text);
  if (lexed.errors.length > 0) {
    return {
      issues: lexed.errors.map((e) =>
        issueAt('condition.syntax', describeLexError(text, e.offset), lines.pos(e.offset)),
      ),
    };
  }
  const tooDeep = nestingViolation(lexed.tokens);
  if (tooDeep) {
    return {
      issues: [
        issueAt(
          'condition.too_deep',
          `condition is nested too deeply (more than ${MAX_DEPTH} levels of brackets and '!')`,
          lines.pos(tooDeep.token.startOffset),
        ),
      ],
    };
  }
  conditionParser.input = lexed.tokens;
  const cst = conditionParser.condition();
  const errors = conditionParser.errors;
  if (errors.length > 0) {
    return {
      issues: errors.map((e) => {
        const token = e.token;
        const offset = token.tokenType === EOF || Number.isNaN(token.startOffset) ? text.length : token.startOffset;
        let message = e.message;
        if (e.name === 'NotAllInputParsedException') {
          const index = lexed.tokens.indexOf(token);
          message = notAllInputMessage(token, index > 0 ? lexed.tokens[index - 1] : undefined);
        }
        return issueAt('condition.syntax', message, lines.pos(offset));
      }),
    };
  }
  builder.lines = lines;
  builder.issues = [];
  const ast = builder.visit(cst) as ConditionAst;
  const issues = builder.issues;
  builder.issues = [];
  return issues.length > 0 ? { issues } : { ast, issues: [] };
}
