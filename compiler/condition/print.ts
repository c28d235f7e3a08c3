/**
 * Canonical text of a condition AST (`printCondition`) and the input paths it
 * reads (`conditionPaths`). Printing then parsing gives back the same AST (up to
 * positions): parentheses are added exactly where precedence needs them, plus
 * around a comparison under `!` for readability.
 */
import type { ConditionAst, LiteralValue } from './ast.js';

const PRECEDENCE: Record<ConditionAst['kind'], number> = {
  or: 1,
  and: 2,
  not: 3,
  compare: 4,
  arith: 5,
  literal: 7,
  path: 7,
  list: 7,
  call: 7,
  history: 7,
};

/** How tightly a node binds: `+ -` 5, `* /` 6. */
function prec(node: ConditionAst): number {
  if (node.kind === 'arith') return node.op === '*' || node.op === '/' ? 6 : 5;
  return PRECEDENCE[node.kind];
}

export function printLiteral(value: LiteralValue): string {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number') return Object.is(value, -0) ? '0' : String(value);
  return String(value);
}

function quote(s: string): string {
  let out = "'";
  for (const c of s) {
    if (c === '\\') out += '\\\\';
    else if (c === "'") out += "\\'";
    else if (c === '\n') out += '\\n';
    else if (c === '\t') out += '\\t';
    else out += c;
  }
  return out + "'";
}

/** `context.a.b`, `amount`, ... */
export function pathText(node: { root: string; segments: readonly string[] }): string {
  return node.segments.length === 0 ? node.root : `${node.root}.${node.segments.join('.')}`;
}

function wrap(node: ConditionAst, parens: boolean): string {
  const text = printCondition(node);
  return parens ? `(${text})` : text;
}

export function printCondition(ast: ConditionAst): string {
  switch (ast.kind) {
    case 'literal':
      return printLiteral(ast.value);
    case 'path':
      return pathText(ast);
    case 'list':
      return `[${ast.items.map((item) => printCondition(item)).join(', ')}]`;
    case 'not':
      return `!${wrap(ast.operand, PRECEDENCE[ast.operand.kind] < 3 || ast.operand.kind === 'compare' || ast.operand.kind === 'arith')}`;
    case 'and':
    case 'or': {
      const own = PRECEDENCE[ast.kind];
      return ast.operands.map((o) => wrap(o, PRECEDENCE[o.kind] <= own)).join(ast.kind === 'and' ? ' && ' : ' || ');
    }
    case 'compare':
      return `${wrap(ast.left, PRECEDENCE[ast.left.kind] <= 4)} ${ast.op} ${wrap(ast.right, PRECEDENCE[ast.right.kind] <= 4)}`;
    case 'call':
      return `${ast.fn}(${ast.args.map((a) => printCondition(a)).join(', ')})`;
    case 'arith': {
      // Left-associative: a right operand of the same precedence keeps its parentheses.
      const own = prec(ast);
      return `${wrap(ast.left, prec(ast.left) < own)} ${ast.op} ${wrap(ast.right, prec(ast.right) <= own)}`;
    }
    case 'history':
      return `history.${ast.fn}(${ast.args.map((a) => printCondition(a)).join(', ')})`;
  }
}

/** The distinct input paths the condition reads, in order of first appearance. */
export function conditionPaths(ast: ConditionAst): string[] {
  const seen = new Set<string>();
  const walk = (node: ConditionAst): void => {
    switch (node.kind) {
      case 'path':
        seen.add(pathText(node));
        return;
      case 'literal':
        return;
      case 'list':
        node.items.forEach(walk);
        return;
      case 'not':
        walk(node.operand);
        return;
      case 'and':
      case 'or':
        node.operands.forEach(walk);
        return;
      case 'compare':
      case 'arith':
        walk(node.left);
        walk(node.right);
        return;
      case 'call':
        node.args.forEach(walk);
        return;
      case 'history':
        return;
    }
  };
  walk(ast);
  return [...seen];
}
