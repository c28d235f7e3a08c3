/**
 * What a detector found in a text: where (UTF-16 offsets), of which kind and
 * by which rule; and the text with its findings replaced (`redact`).
 */

/** A detector's kind, which is also the label a finding adds. */
export type FindingKind = 'secret' | 'pii';

/** One match in a text: `[start, end)` and what matched it. */
export interface Span {
  start: number;
  end: number;
  kind: FindingKind;
  /** What matched: `aws-access-key`, `email`, `iban`... */
  rule: string;
}

/**
 * `text` with each span replaced by `[redacted:<kind>]`; overlapping spans
 * are replaced once, as one (named by the first, in text order).
 *
 * @example
 * ```ts
 * const spans = [{ start: 5, end: 17, kind: 'pii' as const, rule: 'email' }];
 * console.log(redacted('mail ada@example.org now', spans)); // => mail [redacted:pii] now
 * ```
 */
export function redacted(text: string, spans: readonly Span[]): string {
  if (spans.length === 0) return text;
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let at = 0;
  for (const span of sorted) {
    if (span.end <= at) continue;
    if (span.start >= at) out += `${text.slice(at, span.start)}[redacted:${span.kind}]`;
    at = Math.max(at, span.end);
  }
  return out + text.slice(at);
}
