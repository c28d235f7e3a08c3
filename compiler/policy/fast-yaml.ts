/**
 * A fast reader for the YAML that policy files are made of: block mappings and
 * sequences, one-line flow collections, plain and quoted scalars, literal and
 * folded block scalars, comments, several documents. It answers what the `yaml`
 * package's parse + toJS would (YAML 1.2 core schema), or null as soon as the text
 * uses anything outside that subset (anchors, tags, multi-line flow or plain
 * scalars, tabs, CRLF, duplicate keys, escapes JSON lacks...): the caller then
 * reads the file with the full parser, which also reports any error. It keeps the
 * start offsets of the root and of each `policies:` entry only (what reading a
 * policy asks for when nothing is wrong); every other position comes from the
 * full parser, on demand.
 */

export interface FastDocument {
  value: unknown;
  /** Start offset of the node at a JSON pointer: '' and '/policies/<i>' only. */
  offsets: Map<string, number>;
}

/** Thrown inside the reader when the text leaves the subset. */
class OutOfSubset extends Error {}
const OUT = new OutOfSubset('outside the fast subset');

interface Line {
  /** Offset of the line's first character in the text. */
  start: number;
  /** Spaces before the content. */
  indent: number;
  /** The line without its newline. */
  text: string;
  /** Blank or a comment alone. */
  empty: boolean;
}

const NULL_RE = /^(?:~|null|Null|NULL)?$/;
const TRUE_RE = /^(?:true|True|TRUE)$/;
const FALSE_RE = /^(?:false|False|FALSE)$/;
const INT_RE = /^-?[0-9]{1,15}$/;
const DECIMAL_RE = /^-?[0-9]{1,15}\.[0-9]{1,15}$/;
/** Anything else the core schema would not read as a string: left to the full parser. */
const OTHER_NUMBER_RE =
  /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;

/**
 * Parses every document of `text`, or returns null when the text is outside the
 * subset (then the full parser must read it).
 *
 * @param text - the file's text.
 * @returns the documents' values (empty ones skipped) with a few start offsets, or null.
 *
 * @example
 * ```ts
 * parseYamlFast('policies:\n  - name: a\n    actions: [x.read]\n')?.[0]?.value; // { policies: [{ name: 'a', actions: ['x.read'] }] }
 * parseYamlFast('a: &x 1\n'); // null (anchors are left to the full parser)
 * ```
 */
export function parseYamlFast(text: string): FastDocument[] | null {
  if (text.includes('\t') || text.includes('\r') || text.charCodeAt(0) === 0xfeff) return null;
  try {
    return new Reader(text).documents();
  } catch (e) {
    if (e instanceof OutOfSubset) return null;
    throw e;
  }
}

class Reader {
  private readonly lines: Line[] = [];
  private i = 0;
  private offsets = new Map<string, number>();

  constructor(private readonly text: string) {
    let start = 0;
    while (start <= text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      const line = text.slice(start, end);
      let indent = 0;
      while (indent < line.length && line.charCodeAt(indent) === 32) indent++;
      this.lines.push({
        start,
        indent,
        text: line,
        empty: indent === line.length || line.charCodeAt(indent) === 35 /* # */,
      });
      start = end + 1;
    }
  }

  documents(): FastDocument[] {
    const out: FastDocument[] = [];
    for (;;) {
      this.skipEmpty();
      if (this.i >= this.lines.length) return out;
      const line = this.lines[this.i]!;
      if (line.indent === 0 && (line.text.startsWith('%') || line.text.startsWith('...'))) throw OUT;
      if (line.indent === 0 && line.text.startsWith('---')) {
        if (!/^--- *$/.test(line.text)) throw OUT;
        this.i++;
        continue;
      }
      this.offsets = new Map();
      const value = this.block(0, '');
      this.skipEmpty();
      const next = this.lines[this.i];
      if (next && !(next.indent === 0 && /^--- *$/.test(next.text))) throw OUT;
      out.push({ value, offsets: this.offsets });
    }
  }

  private skipEmpty(): void {
    while (this.i < this.lines.length && this.lines[this.i]!.empty) this.i++;
  }

  /** The block collection starting on the current line (a mapping or a sequence). */
  private block(depth: number, pointer: string): unknown {
    const line = this.lines[this.i]!;
    if (isDash(line, line.indent)) return this.sequence(line.indent, depth, pointer);
    if (keyEnd(line.text.slice(line.indent)) > 0) return this.mapping(line.indent, depth, pointer);
    throw OUT; // a scalar or a flow collection on a line of its own
  }

  /** Keeps the start of the root and of each `policies:` entry (what reading a valid policy asks for). */
  private record(pointer: string, depth: number, offset: number): void {
    if (depth === 0 || (depth === 2 && pointer.startsWith('/policies/'))) this.offsets.set(pointer, offset);
  }

  /** A block sequence whose dashes sit at column `indent`, from the current line on. */
  private sequence(indent: number, depth: number, pointer: string): unknown[] {
    const items: unknown[] = [];
    this.record(pointer, depth, this.lines[this.i]!.start + indent);
    for (;;) {
      this.skipEmpty();
      if (this.i >= this.lines.length) break;
      const line = this.lines[this.i]!;
      if (line.indent < indent) break;
      if (line.indent > indent) throw OUT;
      if (!isDash(line, indent)) break;
      const child = `${pointer}/${items.length}`;
      let col = indent + 1;
      while (col < line.text.length && line.text.charCodeAt(col) === 32) col++;
      if (col >= line.text.length || line.text.charCodeAt(col) === 35) {
        // `-` alone: the item is on the next lines, more indented (a null item is left to the full parser).
        this.i++;
        this.skipEmpty();
        const next = this.lines[this.i];
        if (!next || next.indent <= indent) throw OUT;
        items.push(this.block(depth + 1, child));
        continue;
      }
      const inline = line.text.slice(col);
      if (inline === '-' || inline.startsWith('- ')) throw OUT; // a compact sequence in a sequence
      if (keyEnd(inline) > 0) items.push(this.mapping(col, depth + 1, child));
      else {
        this.record(child, depth + 1, line.start + col);
        items.push(this.inlineValue(line, col, indent));
      }
    }
    return items;
  }

  /** A block mapping whose keys sit at column `indent`; its first key is on the current line. */
  private mapping(indent: number, depth: number, pointer: string): Record<string, unknown> {
    const map: Record<string, unknown> = {};
    this.record(pointer, depth, this.lines[this.i]!.start + indent);
    for (let first = true; ; first = false) {
      if (!first) {
        this.skipEmpty();
        if (this.i >= this.lines.length) break;
      }
      const line = this.lines[this.i]!;
      if (!first) {
        if (line.indent < indent) break;
        if (line.indent > indent) throw OUT;
      }
      const rest = line.text.slice(indent);
      const end = keyEnd(rest);
      if (end <= 0) throw OUT;
      const key = readKey(rest.slice(0, end));
      if (Object.prototype.hasOwnProperty.call(map, key)) throw OUT; // a duplicate key: the full parser reports it
      const child = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      let v = indent + end + 1;
      while (v < line.text.length && line.text.charCodeAt(v) === 32) v++;
      if (v < line.text.length && line.text.charCodeAt(v) !== 35) {
        this.record(child, depth + 1, line.start + v);
        map[key] = this.inlineValue(line, v, indent);
        continue;
      }
      // The value is on the next lines: more indented, or a sequence at this indent; else null.
      this.i++;
      this.skipEmpty();
      const next = this.lines[this.i];
      if (next && next.indent > indent) map[key] = this.block(depth + 1, child);
      else if (next && next.indent === indent && isDash(next, indent))
        map[key] = this.sequence(indent, depth + 1, child);
      else map[key] = null;
    }
    return map;
  }

  /**
   * A value starting at column `col` of the current line (a scalar, a one-line
   * flow collection or a block scalar); moves past it. `entryIndent` is where the
   * holding collection's entries sit: a following line indented deeper is left to
   * the full parser (a multi-line plain scalar, or an error).
   */
  private inlineValue(line: Line, col: number, entryIndent: number): unknown {
    const c = line.text.charCodeAt(col);
    let value: unknown;
    if (c === 124 /* | */ || c === 62 /* > */) value = this.blockScalar(line, col, entryIndent);
    else {
      let end: number;
      if (c === 91 /* [ */ || c === 123 /* { */) {
        const flow = new FlowReader(line.text, col);
        value = flow.value();
        end = flow.pos;
      } else if (c === 34 /* " */ || c === 39 /* ' */) {
        [value, end] = readQuoted(line.text, col);
      } else {
        const hash = line.text.indexOf(' #', col);
        value = plainScalar((hash < 0 ? line.text.slice(col) : line.text.slice(col, hash)).trimEnd(), false);
        end = hash < 0 ? line.text.length : hash;
      }
      if (!restIsComment(line.text, end)) throw OUT;
      this.i++;
    }
    // The next line that is not blank (comments count) must not sit deeper than the entries.
    let k = this.i;
    while (k < this.lines.length && this.lines[k]!.indent === this.lines[k]!.text.length) k++;
    if (k < this.lines.length && this.lines[k]!.indent > entryIndent) throw OUT;
    return value;
  }

  /** A literal (`|`, `|-`) or folded (`>`, `>-`) block scalar whose header is at `col`; the holder's entries sit at `parent`. */
  private blockScalar(line: Line, col: number, parent: number): string {
    const header = line.text.slice(col).trimEnd();
    if (header !== '|' && header !== '|-' && header !== '>' && header !== '>-') throw OUT;
    const folded = header[0] === '>';
    const strip = header.endsWith('-');
    this.i++;
    const content: string[] = [];
    let indent = -1;
    while (this.i < this.lines.length) {
      const l = this.lines[this.i]!;
      const blank = l.indent === l.text.length;
      if (indent < 0) {
        if (blank) throw OUT; // leading blank lines: left to the full parser
        if (l.indent <= parent) break;
        indent = l.indent;
      }
      if (blank) {
        if (l.text.length > indent) throw OUT;
        content.push('');
      } else if (l.indent < indent) break;
      else {
        if (l.indent > indent && folded) throw OUT; // more-indented lines of a folded scalar
        content.push(l.text.slice(indent));
      }
      this.i++;
    }
    if (indent < 0) throw OUT; // an empty block scalar
    // Trailing blank lines belong to the chomping; a deeper blank or comment is not read here.
    let n = content.length;
    while (n > 0 && content[n - 1] === '') n--;
    const body = content.slice(0, n);
    let out: string;
    if (!folded) out = body.join('\n');
    else {
      out = body[0]!;
      for (let k = 1; k < body.length; k++) {
        const prev = body[k - 1]!;
        const cur = body[k]!;
        if (cur === '') out += '\n';
        else out += prev === '' ? cur : ` ${cur}`;
      }
    }
    return strip ? out : `${out}\n`;
  }
}

/** Whether the line is a `-` entry at `indent`. */
function isDash(line: Line, indent: number): boolean {
  const rest = line.text.slice(indent);
  return rest === '-' || rest.startsWith('- ');
}

/**
 * Length of a simple key at the start of `rest` when it is followed by `:` and a
 * space or the end of the line; 0 when `rest` is not a `key:` entry.
 */
function keyEnd(rest: string): number {
  const c = rest.charCodeAt(0);
  if (c === 34 || c === 39) {
    let end: number;
    try {
      end = readQuoted(rest, 0)[1];
    } catch {
      return 0;
    }
    if (rest.charCodeAt(end) !== 58) return 0;
    return end + 1 === rest.length || rest.charCodeAt(end + 1) === 32 ? end : 0;
  }
  for (let k = 0; k < rest.length; k++) {
    if (rest.charCodeAt(k) === 58 && (k + 1 === rest.length || rest.charCodeAt(k + 1) === 32)) return k;
    if (rest.charCodeAt(k) === 35 && k > 0 && rest.charCodeAt(k - 1) === 32) return 0;
  }
  return 0;
}

function readKey(raw: string): string {
  const c = raw.charCodeAt(0);
  const key = c === 34 || c === 39 ? (readQuoted(raw, 0)[0] as string) : plainScalar(raw.trimEnd(), false);
  if (typeof key !== 'string' || key === '<<' || key === '__proto__' || key === '') throw OUT;
  return key;
}

/** A quoted scalar starting at `col`: its value and the offset after its closing quote. */
function readQuoted(text: string, col: number): [string, number] {
  const quote = text.charCodeAt(col);
  if (quote === 39) {
    let k = col + 1;
    for (;;) {
      const at = text.indexOf("'", k);
      if (at < 0) throw OUT;
      if (text.charCodeAt(at + 1) === 39) {
        k = at + 2;
        continue;
      }
      return [text.slice(col + 1, at).replace(/''/g, "'"), at + 1];
    }
  }
  let k = col + 1;
  let escaped = false;
  while (k < text.length) {
    const ch = text.charCodeAt(k);
    if (ch === 92) {
      escaped = true;
      k += 2;
      continue;
    }
    if (ch === 34) break;
    k++;
  }
  if (k >= text.length) throw OUT;
  const inner = text.slice(col + 1, k);
  if (!escaped) return [inner, k + 1];
  // JSON's escapes are YAML's too (with the same meaning); any other is left to the full parser.
  if (/\\[^"\\/bfnrtu]/.test(inner)) throw OUT;
  try {
    return [JSON.parse(`"${inner}"`) as string, k + 1];
  } catch {
    throw OUT;
  }
}

/** Whether only spaces and a comment follow `end`. */
function restIsComment(text: string, end: number): boolean {
  let k = end;
  while (k < text.length && text.charCodeAt(k) === 32) k++;
  if (k === text.length) return true;
  return text.charCodeAt(k) === 35 && (k > end || end === 0);
}

/** A plain scalar's value under the core schema, or OUT for what this reader leaves to the full parser. */
function plainScalar(raw: string, flow: boolean): unknown {
  const c = raw.charCodeAt(0);
  // Indicators that cannot start a plain scalar (or that start something else).
  if (raw.length > 0 && '&*!|>\'"%@`#,[]{}'.includes(raw[0]!)) throw OUT;
  if ((c === 45 || c === 63 || c === 58) && (raw.length === 1 || raw.charCodeAt(1) === 32)) throw OUT;
  if (raw.includes(': ') || raw.endsWith(':') || raw.includes(' #')) throw OUT;
  if (flow && /[,[\]{}]/.test(raw)) throw OUT;
  if (NULL_RE.test(raw)) return null;
  if (TRUE_RE.test(raw)) return true;
  if (FALSE_RE.test(raw)) return false;
  if (INT_RE.test(raw) || DECIMAL_RE.test(raw)) return Number(raw);
  if (OTHER_NUMBER_RE.test(raw)) throw OUT;
  return raw;
}

/** Deeper flow nesting than this is left to the full parser (and its diagnostics): no policy field nests more than twice. */
const MAX_FLOW_DEPTH = 32;

/** A one-line flow collection (`[a, "b"]`, `{k: v}`), nested ones included. */
class FlowReader {
  pos: number;
  private depth = 0;

  constructor(
    private readonly text: string,
    start: number,
  ) {
    this.pos = start;
  }

  value(): unknown {
    this.space();
    const c = this.text.charCodeAt(this.pos);
    if (c === 91 || c === 123) {
      if (++this.depth > MAX_FLOW_DEPTH) throw OUT;
      const collection = c === 91 ? this.seq() : this.map();
      this.depth--;
      return collection;
    }
    if (c === 34 || c === 39) {
      const [v, end] = readQuoted(this.text, this.pos);
      this.pos = end;
      return v;
    }
    const start = this.pos;
    while (this.pos < this.text.length) {
      const ch = this.text.charCodeAt(this.pos);
      if (ch === 44 || ch === 93 || ch === 125) break; // , ] }
      if (ch === 58 && (this.pos + 1 >= this.text.length || ' ,]}'.includes(this.text[this.pos + 1]!))) break; // `:` ending a key
      this.pos++;
    }
    const raw = this.text.slice(start, this.pos).trimEnd();
    if (raw === '') throw OUT;
    return plainScalar(raw, true);
  }

  private space(): void {
    while (this.pos < this.text.length && this.text.charCodeAt(this.pos) === 32) this.pos++;
  }

  private seq(): unknown[] {
    this.pos++;
    const out: unknown[] = [];
    for (;;) {
      this.space();
      if (this.pos >= this.text.length) throw OUT;
      if (this.text.charCodeAt(this.pos) === 93) {
        this.pos++;
        return out;
      }
      out.push(this.value());
      this.space();
      const ch = this.text.charCodeAt(this.pos);
      if (ch === 44) this.pos++;
      else if (ch !== 93) throw OUT; // `a: b` pairs in a sequence, or junk
    }
  }

  private map(): Record<string, unknown> {
    this.pos++;
    const out: Record<string, unknown> = {};
    for (;;) {
      this.space();
      if (this.pos >= this.text.length) throw OUT;
      if (this.text.charCodeAt(this.pos) === 125) {
        this.pos++;
        return out;
      }
      const c = this.text.charCodeAt(this.pos);
      if (c === 91 || c === 123) throw OUT;
      const key = this.value();
      if (typeof key !== 'string' || key === '<<' || key === '__proto__' || key === '') throw OUT;
      if (Object.prototype.hasOwnProperty.call(out, key)) throw OUT;
      this.space();
      if (this.text.charCodeAt(this.pos) !== 58 || this.text.charCodeAt(this.pos + 1) !== 32) throw OUT;
      this.pos += 2;
      out[key] = this.value();
      this.space();
      const ch = this.text.charCodeAt(this.pos);
      if (ch === 44) this.pos++;
      else if (ch !== 125) throw OUT;
    }
  }
}
