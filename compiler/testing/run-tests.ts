/** Running policy test cases against a compiled table, field by field. */
import type { DecisionTable } from '../table/build.js';
import { evaluate, type Evaluation } from '../table/evaluate.js';
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
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

export function runCase(table: DecisionTable, testCase: TestCase): CaseResult {
  const actual = evaluate(table, testCase.request);
  const { expect } = testCase;
  const diffs: FieldDiff[] = [];
  if (expect.effect !== actual.effect) diffs.push({ field: 'effect', expected: expect.effect, actual: actual.effect });
  if (expect.reason !== undefined && expect.reason !== actual.reason) diffs.push({ field: 'reason', expected: expect.reason, actual: actual.reason });
  if (expect.policy !== undefined && expect.policy !== actual.policy_id) diffs.push({ field: 'policy', expected: expect.policy, actual: actual.policy_id });
  const warnings = actual.warnings.map((w) => w.code);
  if (expect.warnings !== undefined && !sameSet(expect.warnings, warnings)) diffs.push({ field: 'warnings', expected: expect.warnings, actual: warnings });
  const matched = actual.matched.map((p) => p.id);
  if (expect.matched !== undefined && !sameSet(expect.matched, matched)) diffs.push({ field: 'matched', expected: expect.matched, actual: matched });
  return { name: testCase.name, line: testCase.line, passed: diffs.length === 0, diffs, actual };
}

/** Unified-diff style lines for a failed case. */
export function diffLines(result: CaseResult): string[] {
  const show = (v: unknown) => (Array.isArray(v) ? `[${v.join(', ')}]` : v === null ? 'null' : String(v));
  return result.diffs.flatMap((d) => [`- ${d.field}: ${show(d.expected)}`, `+ ${d.field}: ${show(d.actual)}`]);
}
