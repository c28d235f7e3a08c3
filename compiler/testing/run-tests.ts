/** Running policy test cases against a compiled table, field by field. */
import { probeText } from '../history/probe.js';
import { historyReadings, type HistoryReading } from '../history/probes-of.js';
import type { EvaluationInput } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import { evaluate, type Evaluation } from '../table/evaluate.js';
import { requestWithHistory } from './history.js';
import type { TestCase } from './test-file.js';

export interface FieldDiff {
  field: 'effect' | 'reason' | 'policy' | 'warnings' | 'matched';
  expected: unknown;
  actual: unknown;
}

export interface CaseResult {
  name: string;
  line: number;
  passed: boolean;
  diffs: FieldDiff[];
  actual: Evaluation;
  /** The history the candidate policies read, with the values the case's `history:` gives them. */
  history: HistoryReading[];
}

/** The request a case is decided with: its history (`history:`) and its session's labels. */
export function caseRequest(testCase: TestCase): EvaluationInput {
  return requestWithHistory(testCase.request, testCase.history, testCase.session_labels);
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

export function runCase(table: DecisionTable, testCase: TestCase): CaseResult {
  const request = caseRequest(testCase);
  const actual = evaluate(table, request);
  const { expect } = testCase;
  const diffs: FieldDiff[] = [];
  if (expect.effect !== actual.effect) diffs.push({ field: 'effect', expected: expect.effect, actual: actual.effect });
  if (expect.reason !== undefined && expect.reason !== actual.reason)
    diffs.push({ field: 'reason', expected: expect.reason, actual: actual.reason });
  if (expect.policy !== undefined && expect.policy !== actual.policy_id)
    diffs.push({ field: 'policy', expected: expect.policy, actual: actual.policy_id });
  const warnings = actual.warnings.map((w) => w.code);
  if (expect.warnings !== undefined && !sameSet(expect.warnings, warnings))
    diffs.push({ field: 'warnings', expected: expect.warnings, actual: warnings });
  const matched = actual.matched.map((p) => p.id);
  if (expect.matched !== undefined && !sameSet(expect.matched, matched))
    diffs.push({ field: 'matched', expected: expect.matched, actual: matched });
  return {
    name: testCase.name,
    line: testCase.line,
    passed: diffs.length === 0,
    diffs,
    actual,
    history: historyReadings(table, request),
  };
}

/** Unified-diff style lines for a failed case, then the history values it was decided with. */
export function diffLines(result: CaseResult): string[] {
  const show = (v: unknown) => (Array.isArray(v) ? `[${v.join(', ')}]` : v === null ? 'null' : String(v));
  return [
    ...result.diffs.flatMap((d) => [`- ${d.field}: ${show(d.expected)}`, `+ ${d.field}: ${show(d.actual)}`]),
    ...historyLines(result.history),
  ];
}

/** `history: history.count('payments.refund', '1h') = 3`, one line per reading. */
export function historyLines(readings: readonly HistoryReading[]): string[] {
  return readings.map((r) => `history: ${readingText(r)}`);
}

/** A reading as `history.count('payments.refund', '1h') = 3` (`unknown` when null). */
export function readingText(r: HistoryReading): string {
  return `${probeText(r)} ${r.value === null ? 'unknown' : `= ${r.value}`}`;
}
