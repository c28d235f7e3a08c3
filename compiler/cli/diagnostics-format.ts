/**
 * Printing diagnostics: `FILE:LINE:COL: message` (warnings marked `warning:`),
 * with a code frame under each when writing to a terminal; `--format json`; and
 * `--format github` workflow-command annotations for CI.
 */
import type { Diagnostic } from '../diagnostics/diagnostic.js';

export type OutputFormat = 'text' | 'json' | 'github';

export function formatDiagnostic(d: Diagnostic): string {
  const where = d.file ? `${d.file}:${d.line ?? 1}:${d.col ?? 1}: ` : d.path ? `${d.path}: ` : '';
  return `${where}${d.severity === 'warning' ? 'warning: ' : ''}${d.message}`;
}

/** The source line of a diagnostic with a caret under its column. */
export function codeFrame(d: Diagnostic, text: string | undefined): string | undefined {
  if (text === undefined || d.line === undefined) return undefined;
  const lines = text.split(/\r?\n/);
  const src = lines[d.line - 1];
  if (src === undefined) return undefined;
  const gutter = String(d.line).length;
  const caretPad = src.slice(0, Math.max(0, (d.col ?? 1) - 1)).replace(/[^\t]/g, ' ');
  return [`${' '.repeat(gutter)} |`, `${d.line} | ${src}`, `${' '.repeat(gutter)} | ${caretPad}^`].join('\n');
}

export function githubAnnotation(d: Diagnostic): string {
  const props = [
    d.file && `file=${escapeProperty(d.file)}`,
    d.line && `line=${d.line}`,
    d.col && `col=${d.col}`,
    `title=${escapeProperty(d.code)}`,
  ]
    .filter(Boolean)
    .join(',');
  return `::${d.severity === 'warning' ? 'warning' : 'error'} ${props}::${escapeData(d.message)}`;
}

function escapeData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

export function renderDiagnostics(
  diagnostics: readonly Diagnostic[],
  format: OutputFormat,
  frames: boolean,
  sources: ReadonlyMap<string, string>,
): string[] {
  if (format === 'github') return diagnostics.map(githubAnnotation);
  const out: string[] = [];
  for (const d of diagnostics) {
    out.push(formatDiagnostic(d));
    if (frames) {
      const frame = codeFrame(d, d.file ? sources.get(d.file) : undefined);
      if (frame) out.push(frame, '');
    }
  }
  return out;
}

export function countSummary(diagnostics: readonly Diagnostic[]): { errors: number; warnings: number } {
  let errors = 0;
  let warnings = 0;
  for (const d of diagnostics) d.severity === 'error' ? errors++ : warnings++;
  return { errors, warnings };
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
