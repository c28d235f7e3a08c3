/**
 * From YAML text (or API JSON values) to normalised policies with their parsed
 * conditions and where each came from. Problems are collected, never thrown.
 */
import type { ConditionAst } from '../condition/index.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { checkPolicy } from './check.js';
import { normalizePolicy } from './normalize.js';
import { readYaml, type SourceFile, type SourceLocator } from './source.js';
import type { Policy } from './types.js';
import { validatePolicyShape } from './validate.js';

export interface PolicyOrigin {
  file?: string;
  line?: number;
  col?: number;
  /** JSON pointer of the policy within its document. */
  pointer: string;
  locator?: SourceLocator;
}

export interface ReadPolicy {
  policy: Policy;
  condition: ConditionAst | null;
  origin: PolicyOrigin;
}

export interface ReadResult {
  items: ReadPolicy[];
  diagnostics: Diagnostic[];
}

/** One policy value (a YAML mapping or an API body). */
export function readPolicyValue(value: unknown, base = '', locator?: SourceLocator, generateId?: () => string): ReadResult {
  const diagnostics = validatePolicyShape(value, base, locator);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { items: [], diagnostics };
  // The checks beyond the schema run even when the shape is wrong, so every problem shows at once.
  const record = value as Record<string, unknown>;
  const checked = checkPolicy(record, base, locator);
  diagnostics.push(...checked.diagnostics);
  if (diagnostics.length > 0) return { items: [], diagnostics };
  const pos = locator?.value(base);
  const origin: PolicyOrigin = { pointer: base, ...(locator ? { file: locator.file, line: pos!.line, col: pos!.col, locator } : {}) };
  return { items: [{ policy: normalizePolicy(record, generateId), condition: checked.condition, origin }], diagnostics: [] };
}

/** A document holding one policy, or `policies:` with a list of them. */
export function readPolicyDocument(value: unknown, locator?: SourceLocator): ReadResult {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'policies' in value) {
    const doc = value as Record<string, unknown>;
    const diagnostics: Diagnostic[] = [];
    for (const key of Object.keys(doc)) {
      if (key === 'policies') continue;
      const pos = locator?.key(`/${key}`);
      diagnostics.push({
        severity: 'error',
        code: 'policy.invalid_field',
        message: `unknown field "${key}" beside "policies" (a file holds one policy, or a policies: list)`,
        path: `/${key}`,
        ...(locator ? { file: locator.file, line: pos!.line, col: pos!.col } : {}),
      });
    }
    if (!Array.isArray(doc.policies)) {
      const pos = locator?.value('/policies');
      diagnostics.push({
        severity: 'error',
        code: 'policy.invalid_field',
        message: 'policies must be a list of policies',
        path: '/policies',
        ...(locator ? { file: locator.file, line: pos!.line, col: pos!.col } : {}),
      });
      return { items: [], diagnostics };
    }
    const items: ReadPolicy[] = [];
    doc.policies.forEach((entry, i) => {
      const r = readPolicyValue(entry, `/policies/${i}`, locator);
      items.push(...r.items);
      diagnostics.push(...r.diagnostics);
    });
    return { items, diagnostics };
  }
  return readPolicyValue(value, '', locator);
}

export function readPolicySource(source: SourceFile): ReadResult {
  const { documents, diagnostics } = readYaml(source);
  const items: ReadPolicy[] = [];
  for (const doc of documents) {
    const r = readPolicyDocument(doc.value, doc.locator);
    items.push(...r.items);
    diagnostics.push(...r.diagnostics);
  }
  return { items, diagnostics };
}
