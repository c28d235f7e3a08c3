/**
 * Reading policy YAML with source positions: every value of the parsed document can
 * be traced back to the line and column it came from, by its JSON pointer.
 */
import { LineCounter, parseAllDocuments, isMap, isSeq, isScalar, isPair, Scalar, type Node } from 'yaml';
import type { Diagnostic } from '../diagnostics/diagnostic.js';

export interface SourceFile {
  /** Name used in diagnostics (the path as the user gave it). */
  file: string;
  text: string;
}

export interface Position {
  line: number;
  col: number;
}

/** Where the values of one YAML document came from, keyed by JSON pointer. */
export class SourceLocator {
  private readonly values = new Map<string, Node>();
  private readonly keys = new Map<string, Node>();

  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
    root: Node | null,
  ) {
    if (root) this.index(root, '');
  }

  /** Position of the value at `pointer`, or of its nearest located ancestor. */
  value(pointer: string): Position {
    let p = pointer;
    for (;;) {
      const node = this.values.get(p);
      if (node?.range) return this.at(node.range[0]);
      if (p === '') return { line: 1, col: 1 };
      p = p.slice(0, p.lastIndexOf('/'));
    }
  }

  /** Position of the key whose value is at `pointer` (falls back to the value). */
  key(pointer: string): Position {
    const node = this.keys.get(pointer);
    return node?.range ? this.at(node.range[0]) : this.value(pointer);
  }

  /**
   * Position of the character at `offset` inside the string scalar at `pointer`
   * (for errors inside conditions). Exact for plain and quoted scalars on one line
   * and for literal blocks; the scalar's start otherwise.
   */
  inScalar(pointer: string, offset: number): Position {
    const node = this.values.get(pointer);
    if (!node || !isScalar(node) || !node.range) return this.value(pointer);
    const start = this.at(node.range[0]);
    const value = String(node.value);
    const before = value.slice(0, offset);
    const lineIndex = before.split('\n').length - 1;
    const colInLine = offset - (before.lastIndexOf('\n') + 1);
    switch (node.type) {
      case Scalar.PLAIN:
        return lineIndex === 0 ? { line: start.line, col: start.col + offset } : start;
      case Scalar.QUOTE_DOUBLE:
      case Scalar.QUOTE_SINGLE:
        return lineIndex === 0 && !/[\\']/.test(before) ? { line: start.line, col: start.col + 1 + offset } : start;
      case Scalar.BLOCK_LITERAL: {
        // The header (| or |-) sits at the start; content begins on the next line.
        const contentLine = start.line + 1 + lineIndex;
        const first = this.lineText(start.line + 1);
        const indent = first.length - first.trimStart().length;
        return { line: contentLine, col: indent + 1 + colInLine };
      }
      default:
        return start;
    }
  }

  private lineText(line: number): string {
    const starts = this.lines.lineStarts;
    const from = starts[line - 1];
    if (from === undefined) return '';
    const to = starts[line] ?? Infinity;
    return this.source.slice(from, to === Infinity ? undefined : to - 1);
  }

  /** Set by the reader so that block scalars can be measured. */
  source = '';

  private at(offset: number): Position {
    const { line, col } = this.lines.linePos(offset);
    return { line, col };
  }

  private index(node: Node, pointer: string): void {
    this.values.set(pointer, node);
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const child = `${pointer}/${escapePointer(key)}`;
        if (pair.key && typeof pair.key === 'object') this.keys.set(child, pair.key as Node);
        if (pair.value && typeof pair.value === 'object') this.index(pair.value as Node, child);
        else if (pair.key && typeof pair.key === 'object') this.values.set(child, pair.key as Node);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        if (item && typeof item === 'object') this.index(item as Node, `${pointer}/${i}`);
      });
    }
  }
}

export function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

export interface YamlDocument {
  value: unknown;
  locator: SourceLocator;
}

/**
 * Parses every YAML document of a file, keeping where each value came from:
 * each document comes with a SourceLocator that gives the line and column of any
 * value by its JSON pointer. Syntax errors become `yaml.syntax` diagnostics (never
 * thrown); duplicate keys are errors; empty documents are skipped.
 *
 * @param source - `{ file, text }`; `file` names the file in diagnostics and locators.
 * @returns the documents' values with their locators, and the diagnostics.
 *
 * @example
 * ```ts
 * import { readYaml } from 'agent-authz/compiler';
 *
 * const { documents } = readYaml({ file: 'p.yaml', text: 'name: a\nactions:\n  - orders.read\n' });
 * console.log(JSON.stringify(documents[0].value)); // => {"name":"a","actions":["orders.read"]}
 * console.log(JSON.stringify(documents[0].locator.value('/actions/0'))); // => {"line":3,"col":5}
 * console.log(readYaml({ file: 'bad.yaml', text: 'a: [1,' }).diagnostics[0].code); // => yaml.syntax
 * ```
 */
export function readYaml(source: SourceFile): { documents: YamlDocument[]; diagnostics: Diagnostic[] } {
  const lines = new LineCounter();
  const diagnostics: Diagnostic[] = [];
  const parsed = parseAllDocuments(source.text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const docs = Array.isArray(parsed) ? parsed : [];
  if (!Array.isArray(parsed)) {
    // An empty stream parses to an EmptyStream object.
    return { documents: [], diagnostics };
  }
  const documents: YamlDocument[] = [];
  for (const doc of docs) {
    /** Lines already given our sentence (one per line, beside the first of the parser's errors there). */
    const explained = new Set<number>();
    for (const err of [...doc.errors, ...doc.warnings]) {
      const { line, col } = lines.linePos(err.pos[0]);
      const parser = firstLine(err.message);
      const ours = explained.has(line) ? undefined : indentationSentence(err.code, parser);
      if (ours) explained.add(line);
      diagnostics.push({
        severity: err.name === 'YAMLWarning' ? 'warning' : 'error',
        code: 'yaml.syntax',
        message: ours ? `${ours} (the YAML parser: ${parser})` : parser,
        file: source.file,
        line,
        col,
      });
    }
    if (doc.errors.length > 0) continue;
    const locator = new SourceLocator(source.file, lines, doc.contents as Node | null);
    locator.source = source.text;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      diagnostics.push({
        severity: 'error',
        code: 'yaml.syntax',
        message: (e as Error).message,
        file: source.file,
        line: 1,
        col: 1,
      });
      continue;
    }
    if (value === null || value === undefined) continue; // empty document
    documents.push({ value, locator });
  }
  return { documents, diagnostics };
}

/**
 * Our sentence for the YAML parser's indentation errors (its own words stay
 * beside it), or undefined for other errors.
 */
function indentationSentence(code: string, parser: string): string | undefined {
  if (/^Flow (sequence|mapping)/.test(parser))
    return 'a [ or { opened above is not closed (a missing ] or }?) before this line';
  switch (code) {
    case 'TAB_AS_INDENT':
      return 'indentation: a tab; YAML indents with spaces only';
    case 'BAD_INDENT':
      return 'indentation: this line does not line up with the keys beside it; the keys of one mapping start at the same column';
    case 'BLOCK_AS_IMPLICIT_KEY':
    case 'MULTILINE_IMPLICIT_KEY':
      return 'indentation: this line is indented deeper or less than the keys beside it; the keys of one policy (or of one list item) start at the same column';
    case 'MISSING_CHAR':
      return parser.startsWith('Sequence item without - indicator')
        ? 'indentation: this line is indented less than the list item above it, or lacks its "- "; the keys of one list item start at the same column'
        : undefined;
    default:
      return undefined;
  }
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}
