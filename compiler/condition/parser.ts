/**
 * The grammar of the condition language (grammar only: the AST is built by the
 * CST visitor in ast.ts). One parser instance is built at module load, because
 * chevrotain's self-analysis is slow; parsing is synchronous, so it is shared.
 *
 *   condition  := orExpr
 *   orExpr     := andExpr ('||' andExpr)*
 *   andExpr    := notExpr ('&&' notExpr)*
 *   notExpr    := '!'* comparison
 *   comparison := sum (('==' | '!=' | '<' | '<=' | '>' | '>=' | 'in') sum)?
 *   sum        := product (('+' | '-') product)*
 *   product    := operand (('*' | '/') operand)*
 *   operand    := literal | list | '(' orExpr ')' | pathOrCall
 *   literal    := number | string | 'true' | 'false' | 'null'
 *   list       := '[' (listItem (',' listItem)*)? ']'
 *   listItem   := literal | path
 *   pathOrCall := name ('.' fieldName)* ('(' (orExpr (',' orExpr)*)? ')')?
 *   path       := name ('.' fieldName)*
 *
 * `pathOrCall` is a call when parentheses follow (`startsWith(...)`,
 * `history.count(...)`), else a path: one rule, so telling them apart needs no
 * lookahead past the name.
 *
 * Comparisons are non-associative: `a < b < c` stops after `a < b` and the rest is
 * reported. Nesting is bounded before chevrotain runs (`nestingViolation`), so
 * its recursion stays shallow whatever the input.
 */
import {
  CstParser,
  EOF,
  tokenMatcher,
  type IParserErrorMessageProvider,
  type IToken,
  type TokenType,
} from 'chevrotain';
import {
  AddOp,
  allTokens,
  And,
  Comma,
  CompareOp,
  Dot,
  False,
  FieldName,
  Identifier,
  LBracket,
  LParen,
  Minus,
  MulOp,
  Not,
  Null,
  NumberLiteral,
  Or,
  RBracket,
  RParen,
  StringLiteral,
  True,
} from './lexer.js';

/** Maximum nesting depth: open `(` / `[` / call parentheses plus pending `!`. */
export const MAX_DEPTH = 32;

function label(type: TokenType): string {
  return type === EOF ? 'end of condition' : (type.LABEL ?? type.name);
}

/** How a token that was found is named in messages. */
export function describeFound(token: IToken): string {
  if (token.tokenType === EOF) return 'end of condition';
  const image = token.image.length > 30 ? `${token.image.slice(0, 27)}...` : token.image;
  return `'${image}'`;
}

function after(previous: IToken | undefined): string {
  return previous && previous.tokenType !== EOF ? ` after ${describeFound(previous)}` : '';
}

function chained(found: IToken): string {
  return `comparisons cannot be chained: found ${describeFound(found)} after a complete comparison (join comparisons with && or ||)`;
}

const OPERAND_RULES = new Set(['operand', 'notExpr', 'comparison', 'sum', 'product']);

const messages: IParserErrorMessageProvider = {
  buildMismatchTokenMessage({ expected, actual, previous, ruleName }) {
    if (ruleName !== 'list' && tokenMatcher(actual, CompareOp) && (expected === RParen || expected === EOF))
      return chained(actual);
    let wanted = label(expected);
    if (ruleName === 'list' && expected === RBracket) wanted = "',' or ']'";
    if (ruleName === 'pathOrCall' && expected === RParen)
      wanted = previous?.tokenType === LParen ? "an argument or ')'" : "',' or ')'";
    return `expected ${wanted}${after(previous)} but found ${describeFound(actual)}`;
  },
  buildNotAllInputParsedMessage({ firstRedundant }) {
    // Rebuilt with the previous token by parseCondition; this is the fallback.
    return notAllInputMessage(firstRedundant, undefined);
  },
  buildNoViableAltMessage({ actual, previous, ruleName }) {
    const found = actual[0]!;
    if (
      found.tokenType === Minus &&
      (ruleName === 'operand' || ruleName === 'listItem' || OPERAND_RULES.has(ruleName))
    ) {
      return "unexpected '-': a minus sign must be directly followed by the digits of a number";
    }
    if (OPERAND_RULES.has(ruleName)) {
      if (previous === undefined || previous.tokenType === EOF) {
        return found.tokenType === EOF
          ? 'expected a condition but found end of condition'
          : `expected an operand but found ${describeFound(found)}`;
      }
      return `expected an operand${after(previous)} but found ${describeFound(found)}`;
    }
    if (ruleName === 'listItem')
      return `expected a list element (a literal or a path)${after(previous)} but found ${describeFound(found)}`;
    if (ruleName === 'literal') return `expected a literal${after(previous)} but found ${describeFound(found)}`;
    return `unexpected ${describeFound(found)}${after(previous)}`;
  },
  buildEarlyExitMessage({ actual, previous }) {
    return `unexpected ${describeFound(actual[0]!)}${after(previous)}`;
  },
};

/** The message when input is left after a complete condition. */
export function notAllInputMessage(found: IToken, previous: IToken | undefined): string {
  if (tokenMatcher(found, CompareOp)) return chained(found);
  if (found.tokenType === RParen) return "found ')' without a matching '('";
  if (found.tokenType === RBracket) return "found ']' without a matching '['";
  return `expected an operator or end of condition${after(previous)} but found ${describeFound(found)}`;
}

class ConditionParser extends CstParser {
  constructor() {
    super(allTokens, {
      recoveryEnabled: false,
      maxLookahead: 2,
      errorMessageProvider: messages,
      nodeLocationTracking: 'none',
    });
    this.performSelfAnalysis();
  }

  condition = this.RULE('condition', () => {
    this.SUBRULE(this.orExpr);
  });

  orExpr = this.RULE('orExpr', () => {
    this.SUBRULE(this.andExpr, { LABEL: 'operands' });
    this.MANY(() => {
      this.CONSUME(Or);
      this.SUBRULE2(this.andExpr, { LABEL: 'operands' });
    });
  });

  andExpr = this.RULE('andExpr', () => {
    this.SUBRULE(this.notExpr, { LABEL: 'operands' });
    this.MANY(() => {
      this.CONSUME(And);
      this.SUBRULE2(this.notExpr, { LABEL: 'operands' });
    });
  });

  notExpr = this.RULE('notExpr', () => {
    this.MANY(() => this.CONSUME(Not, { LABEL: 'nots' }));
    this.SUBRULE(this.comparison);
  });

  comparison = this.RULE('comparison', () => {
    this.SUBRULE(this.sum, { LABEL: 'left' });
    this.OPTION(() => {
      this.CONSUME(CompareOp, { LABEL: 'op' });
      this.SUBRULE2(this.sum, { LABEL: 'right' });
    });
  });

  sum = this.RULE('sum', () => {
    this.SUBRULE(this.product, { LABEL: 'operands' });
    this.MANY(() => {
      this.CONSUME(AddOp, { LABEL: 'ops' });
      this.SUBRULE2(this.product, { LABEL: 'operands' });
    });
  });

  product = this.RULE('product', () => {
    this.SUBRULE(this.operand, { LABEL: 'operands' });
    this.MANY(() => {
      this.CONSUME(MulOp, { LABEL: 'ops' });
      this.SUBRULE2(this.operand, { LABEL: 'operands' });
    });
  });

  operand = this.RULE('operand', () => {
    this.OR([
      { ALT: () => this.SUBRULE(this.literal) },
      { ALT: () => this.SUBRULE(this.list) },
      { ALT: () => this.SUBRULE(this.parenExpr) },
      { ALT: () => this.SUBRULE(this.pathOrCall) },
    ]);
  });

  literal = this.RULE('literal', () => {
    this.OR([
      { ALT: () => this.CONSUME(NumberLiteral, { LABEL: 'token' }) },
      { ALT: () => this.CONSUME(StringLiteral, { LABEL: 'token' }) },
      { ALT: () => this.CONSUME(True, { LABEL: 'token' }) },
      { ALT: () => this.CONSUME(False, { LABEL: 'token' }) },
      { ALT: () => this.CONSUME(Null, { LABEL: 'token' }) },
    ]);
  });

  list = this.RULE('list', () => {
    this.CONSUME(LBracket, { LABEL: 'open' });
    this.OPTION(() => {
      this.SUBRULE(this.listItem, { LABEL: 'items' });
      this.MANY(() => {
        this.CONSUME(Comma);
        this.SUBRULE2(this.listItem, { LABEL: 'items' });
      });
    });
    this.CONSUME(RBracket);
  });

  listItem = this.RULE('listItem', () => {
    this.OR([{ ALT: () => this.SUBRULE(this.literal) }, { ALT: () => this.SUBRULE(this.path) }]);
  });

  parenExpr = this.RULE('parenExpr', () => {
    this.CONSUME(LParen);
    this.SUBRULE(this.orExpr, { LABEL: 'inner' });
    this.CONSUME(RParen);
  });

  pathOrCall = this.RULE('pathOrCall', () => {
    this.CONSUME(Identifier, { LABEL: 'root' });
    this.MANY(() => {
      this.CONSUME(Dot);
      this.CONSUME(FieldName, { LABEL: 'segments' });
    });
    this.OPTION(() => {
      this.CONSUME(LParen, { LABEL: 'open' });
      this.OPTION2(() => {
        this.SUBRULE(this.orExpr, { LABEL: 'args' });
        this.MANY2(() => {
          this.CONSUME(Comma);
          this.SUBRULE2(this.orExpr, { LABEL: 'args' });
        });
      });
      this.CONSUME(RParen);
    });
  });

  path = this.RULE('path', () => {
    this.CONSUME(Identifier, { LABEL: 'root' });
    this.MANY(() => {
      this.CONSUME(Dot);
      this.CONSUME(FieldName, { LABEL: 'segments' });
    });
  });
}

export const conditionParser = new ConditionParser();

export interface NestingViolation {
  token: IToken;
  depth: number;
}

/**
 * The first token at which nesting exceeds `limit`, or undefined. Depth counts
 * each open `(` or `[` (grouping, call or list) and each `!` still in force; a
 * `!` ends at the `&&`, `||` or `,` that closes its operand, or with its bracket.
 * Linear and non-recursive, so it is safe on any token stream.
 */
export function nestingViolation(tokens: readonly IToken[], limit = MAX_DEPTH): NestingViolation | undefined {
  const nots: number[] = [0];
  let depth = 0;
  for (const token of tokens) {
    const type = token.tokenType;
    if (type === LParen || type === LBracket) {
      nots.push(0);
      depth++;
    } else if (type === RParen || type === RBracket) {
      if (nots.length > 1) depth -= 1 + nots.pop()!;
    } else if (type === Not) {
      nots[nots.length - 1]!++;
      depth++;
    } else if (type === And || type === Or || type === Comma) {
      depth -= nots[nots.length - 1]!;
      nots[nots.length - 1] = 0;
    }
    if (depth > limit) return { token, depth };
  }
  return undefined;
}
