/**
 * Reading policy YAML fast: the subset reader (fast-yaml.ts) when the file allows
 * it, the full parser (source.ts) otherwise. Positions cost nothing until asked
 * for: the start of each policy is known from the fast read, and anything else
 * (a diagnostic's line and column) re-reads that one file with the full parser,
 * once, so every position is the one the full parser gives.
 */
import { LineCounter } from 'yaml';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { parseYamlFast } from './fast-yaml.js';
import { readYaml, SourceLocator, type Position, type SourceFile, type YamlDocument } from './source.js';

/** A locator that knows a few starts and asks the full parser's locator for the rest. */
class LazyLocator extends SourceLocator {
  constructor(
    file: string,
    private readonly offsets: ReadonlyMap<string, number>,
    private readonly lineStarts: () => readonly number[],
    private readonly full: () => SourceLocator,
  ) {
    super(file, new LineCounter(), null);
  }

  override value(pointer: string): Position {
    const offset = this.offsets.get(pointer);
    return offset === undefined ? this.full().value(pointer) : positionOf(this.lineStarts(), offset);
  }

  override key(pointer: string): Position {
    return this.full().key(pointer);
  }

  override inScalar(pointer: string, offset: number): Position {
    return this.full().inScalar(pointer, offset);
  }
}

function lineStartsOf(text: string): number[] {
  const starts = [0];
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) starts.push(at + 1);
  return starts;
}

/** Line and column (from 1) of an offset, as the `yaml` package's LineCounter gives them. */
function positionOf(starts: readonly number[], offset: number): Position {
  let lo = 0;
  let hi = starts.length;
  while (lo + 1 < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid;
  }
  return { line: lo + 1, col: offset - starts[lo]! + 1 };
}

/**
 * {@link readYaml}, faster: the same documents, values and diagnostics, with
 * locators that give the same positions; files outside the fast reader's subset
 * (and files with YAML errors) go through readYaml itself.
 *
 * @param source - `{ file, text }`.
 * @returns the documents with their locators, and the diagnostics.
 *
 * @example
 * ```ts
 * import { readYamlFast } from 'agent-authz/compiler';
 *
 * const { documents } = readYamlFast({ file: 'p.yaml', text: 'name: a\nactions:\n  - orders.read\n' });
 * console.log(JSON.stringify(documents[0].value)); // => {"name":"a","actions":["orders.read"]}
 * // A position the fast read did not keep comes from the full parser, on demand:
 * console.log(JSON.stringify(documents[0].locator.value('/actions/0'))); // => {"line":3,"col":5}
 * ```
 */
export function readYamlFast(source: SourceFile): { documents: YamlDocument[]; diagnostics: Diagnostic[] } {
  const fast = parseYamlFast(source.text);
  if (fast === null) return readYaml(source);
  let full: YamlDocument[] | undefined;
  let starts: number[] | undefined;
  const lineStarts = () => (starts ??= lineStartsOf(source.text));
  const documents = fast.map((doc, k) => ({
    value: doc.value,
    locator: new LazyLocator(
      source.file,
      doc.offsets,
      lineStarts,
      () => (full ??= readYaml(source).documents)[k]!.locator,
    ),
  }));
  return { documents, diagnostics: [] };
}
