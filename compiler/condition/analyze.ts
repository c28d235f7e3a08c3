/** `analyzeCondition`: parse, type check and compile in one step. */
import { parseCondition, type ConditionAst, type ConditionIssue } from './ast.js';
import { checkCondition } from './check.js';
import { compileCondition } from './compile.js';
import type { EvaluationInput } from '../policy/types.js';

export interface ConditionAnalysis {
  /** Present when the text parsed (even if it has type errors). */
  ast?: ConditionAst;
  issues: ConditionIssue[];
  /** Present only when there are no issues. */
  evaluate?: (input: EvaluationInput) => boolean;
}

export function analyzeCondition(text: string): ConditionAnalysis {
  const parsed = parseCondition(text);
  if (!parsed.ast) return { issues: parsed.issues };
  const issues = checkCondition(parsed.ast);
  if (issues.length > 0) return { ast: parsed.ast, issues };
  return { ast: parsed.ast, issues: [], evaluate: compileCondition(parsed.ast) };
}
