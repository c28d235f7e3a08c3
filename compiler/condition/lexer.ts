/**
 * Tokens of the condition language. Built once at module load.
 *
 * Keywords (`true`, `false`, `null`, `in`) fall back to identifiers when they are
 * only the start of a longer name (`inbound`, `nullable`). After a `.`, keywords
 * are accepted as field names (`context.in`), through the `FieldName` category.
 * A `-` directly followed by digits is a number's sign (`-3`) where an operand
 * is expected (at the start, after an operator, `(`, `[` or `,`); after an
 * operand (`amount-3`, `(a) - 3`) it is subtraction.
 */
import { createToken, Lexer, type ILexingError, type IToken, type TokenType } from 'chevrotain';

export const FieldName = createToken({ name: 'FieldName', pattern: Lexer.NA, label: 'a field name' });
export const CompareOp = createToken({ name: 'CompareOp', pattern: Lexer.NA, label: 'a comparison operator' });
export const AddOp = createToken({ name: 'AddOp', pattern: Lexer.NA, label: "'+' or '-'" });
export const MulOp = createToken({ name: 'MulOp', pattern: Lexer.NA, label: "'*' or '/'" });

export const WhiteSpace = createToken({
  name: 'WhiteSpace',
  pattern: /[ \t\r\n]+/,
  group: Lexer.SKIPPED,
  line_breaks: true,
});

export const Identifier = createToken({
  name: 'Identifier',
  pattern: /[A-Za-z_][A-Za-z0-9_]*/,
  label: 'a name',
  categories: [FieldName],
});

function keyword(word: string, extra: TokenType[] = []): TokenType {
  return createToken({
    name: word.charAt(0).toUpperCase() + word.slice(1),
    pattern: new RegExp(word),
    longer_alt: Identifier,
    label: `'${word}'`,
    categories: [FieldName, ...extra],
  });
}

export const True = keyword('true');
export const False = keyword('false');
export const Null = keyword('null');
export const In = keyword('in', [CompareOp]);

const NUMBER = /-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/** Tokens after which a value has just ended, so a `-` there is subtraction, not a sign. */
const OPERAND_ENDS: ReadonlySet<string> = new Set([
  'NumberLiteral',
  'StringLiteral',
  'Identifier',
  'True',
  'False',
  'Null',
  'RParen',
  'RBracket',
]);

/** A number, its `-` sign included only where an operand is expected (see the module comment). */
function matchNumber(text: string, offset: number, tokens: IToken[]): RegExpExecArray | null {
  if (text.charCodeAt(offset) === 45 /* - */) {
    const previous = tokens[tokens.length - 1];
    if (previous !== undefined && OPERAND_ENDS.has(previous.tokenType.name)) return null;
    // `in` ends an operand only as a field name (`context.in - 1`).
    if (previous?.tokenType.name === 'In' && tokens[tokens.length - 2]?.tokenType.name === 'Dot') return null;
  }
  NUMBER.lastIndex = offset;
  return NUMBER.exec(text);
}

export const NumberLiteral = createToken({
  name: 'NumberLiteral',
  pattern: { exec: matchNumber },
  line_breaks: false,
  start_chars_hint: ['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
  label: 'a number',
});
/** Escapes are validated (and decoded) when the AST is built, so a bad escape gets its own message. */
export const StringLiteral = createToken({
  name: 'StringLiteral',
  pattern: /'(?:[^'\\]|\\[\s\S])*'|"(?:[^"\\]|\\[\s\S])*"/,
  start_chars_hint: ["'", '"'],
  line_breaks: true,
  label: 'a string',
});

export const Or = createToken({ name: 'Or', pattern: /\|\|/, label: "'||'" });
export const And = createToken({ name: 'And', pattern: /&&/, label: "'&&'" });
export const Eq = createToken({ name: 'Eq', pattern: /==/, label: "'=='", categories: [CompareOp] });
export const Neq = createToken({ name: 'Neq', pattern: /!=/, label: "'!='", categories: [CompareOp] });
export const Le = createToken({ name: 'Le', pattern: /<=/, label: "'<='", categories: [CompareOp] });
export const Ge = createToken({ name: 'Ge', pattern: />=/, label: "'>='", categories: [CompareOp] });
export const Lt = createToken({ name: 'Lt', pattern: /</, label: "'<'", categories: [CompareOp] });
export const Gt = createToken({ name: 'Gt', pattern: />/, label: "'>'", categories: [CompareOp] });
export const Plus = createToken({ name: 'Plus', pattern: /\+/, label: "'+'", categories: [AddOp] });
export const Minus = createToken({ name: 'Minus', pattern: /-/, label: "'-'", categories: [AddOp] });
export const Star = createToken({ name: 'Star', pattern: /\*/, label: "'*'", categories: [MulOp] });
export const Slash = createToken({ name: 'Slash', pattern: /\//, label: "'/'", categories: [MulOp] });
export const Not = createToken({ name: 'Not', pattern: /!/, label: "'!'" });
export const LParen = createToken({ name: 'LParen', pattern: /\(/, label: "'('" });
export const RParen = createToken({ name: 'RParen', pattern: /\)/, label: "')'" });
export const LBracket = createToken({ name: 'LBracket', pattern: /\[/, label: "'['" });
export const RBracket = createToken({ name: 'RBracket', pattern: /\]/, label: "']'" });
export const Comma = createToken({ name: 'Comma', pattern: /,/, label: "','" });
export const Dot = createToken({ name: 'Dot', pattern: /\./, label: "'.'" });

/** Order matters: longer operators before their prefixes, keywords before Identifier. */
export const allTokens: TokenType[] = [
  WhiteSpace,
  NumberLiteral,
  StringLiteral,
  Or,
  And,
  Eq,
  Neq,
  Le,
  Ge,
  Lt,
  Gt,
  Plus,
  Minus,
  Star,
  Slash,
  Not,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Dot,
  True,
  False,
  Null,
  In,
  Identifier,
  FieldName,
  CompareOp,
  AddOp,
  MulOp,
];

const conditionLexer = new Lexer(allTokens, { positionTracking: 'onlyOffset', ensureOptimizations: true });

export interface LexResult {
  tokens: IToken[];
  errors: ILexingError[];
}

export function tokenize(text: string): LexResult {
  const result = conditionLexer.tokenize(text);
  return { tokens: result.tokens, errors: result.errors };
}

/** A plain-words message for the character a lexer error stopped at. */
export function describeLexError(text: string, offset: number): string {
  const ch = text.charAt(offset);
  switch (ch) {
    case "'":
    case '"':
      return `unterminated string: no closing ${ch} before the end of the condition`;
    case '&':
      return "unexpected '&' (use '&&' for and)";
    case '|':
      return "unexpected '|' (use '||' for or)";
    case '=':
      return "unexpected '=' (use '==' to compare)";
    default: {
      const code = ch.codePointAt(0) ?? 0;
      const shown =
        code < 0x20 || code === 0x7f || /\s/.test(ch)
          ? `U+${code.toString(16).toUpperCase().padStart(4, '0')}`
          : `'${String.fromCodePoint(code)}'`;
      return `unexpected character ${shown}`;
    }
  }
}
