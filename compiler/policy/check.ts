/**
 * Checks of one schema-valid policy beyond its JSON Schema: the condition (parsed
 * and type-checked, errors at line:col inside the YAML file), currency codes.
 */
import { checkCondition, parseCondition, type ConditionAst, type ConditionIssue } from '../condition/index.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import type { SourceLocator } from './source.js';

let currencies: Set<string> | undefined;

function isCurrency(code: string): boolean {
  currencies ??= new Set(Intl.supportedValuesOf('currency'));
  return currencies.has(code);
}

/** Largest policy accepted, as compact JSON in UTF-8 (its lists alone could otherwise reach megabytes). */
export const MAX_POLICY_BYTES = 64 * 1024;

/** The policy's size as compact JSON in UTF-8 bytes (Infinity when it cannot be serialised, e.g. a YAML alias cycle). */
export function policyBytes(value: unknown): number {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return Infinity;
  }
  if (text === undefined) return 0;
  return text.length * 3 <= MAX_POLICY_BYTES ? text.length : Buffer.byteLength(text);
}

export interface PolicyCheck {
  diagnostics: Diagnostic[];
  condition: ConditionAst | null;
}

export function checkPolicy(value: Record<string, unknown>, base: string, locator?: SourceLocator): PolicyCheck {
  const diagnostics: Diagnostic[] = [];
  const at = (pointer: string, pos?: { line: number; col: number }) => {
    const full = base + pointer;
    const where = pos ?? locator?.value(full);
    return { path: full || '/', ...(locator && where ? { file: locator.file, line: where.line, col: where.col } : {}) };
  };
  if (value.id === undefined && value.name === undefined) {
    diagnostics.push({
      severity: 'error',
      code: 'policy.missing_id',
      message: 'a policy needs an id or a name',
      ...at(''),
    });
  }
  const bytes = policyBytes(value);
  if (bytes > MAX_POLICY_BYTES) {
    const size = Number.isFinite(bytes) ? `${Math.ceil(bytes / 1024)} KiB` : 'too large to measure';
    diagnostics.push({
      severity: 'error',
      code: 'policy.too_large',
      message: `the policy is ${size} as JSON; the limit is ${MAX_POLICY_BYTES / 1024} KiB (split it into several policies)`,
      ...at(''),
    });
  }
  const budget = value.budget as { unit?: string } | undefined;
  if (typeof budget?.unit === 'string' && /^[A-Z]{3}$/.test(budget.unit) && !isCurrency(budget.unit)) {
    diagnostics.push({
      severity: 'error',
      code: 'policy.invalid_field',
      message: `budget.unit "${budget.unit}" is not an ISO 4217 currency code (or calls, or tokens)`,
      ...at('/budget/unit'),
    });
  }
  let condition: ConditionAst | null = null;
  if (typeof value.condition === 'string') {
    const parsed = parseCondition(value.condition);
    const issues: ConditionIssue[] = parsed.ast ? [...parsed.issues, ...checkCondition(parsed.ast)] : parsed.issues;
    for (const issue of issues) {
      const pos = locator?.inScalar(base + '/condition', issue.offset);
      diagnostics.push({
        severity: 'error',
        code: issue.code,
        message: `condition: ${issue.message}`,
        ...at('/condition', pos),
        ...(locator ? {} : { message: `condition (${issue.line}:${issue.col}): ${issue.message}` }),
      });
    }
    if (issues.length === 0 && parsed.ast) condition = parsed.ast;
  }
  return { diagnostics, condition };
}
