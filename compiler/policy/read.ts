/**
 * From YAML text (or API JSON values) to normalised policies with their parsed
 * conditions and where each came from. Problems are collected, never thrown.
 */
import type { ConditionAst } from '../condition/index.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { checkPolicy } from './check.js';
import { normalizePolicy } from './normalize.js';
import { readYamlFast } from './fast-source.js';
import type { SourceFile, SourceLocator } from './source.js';
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

/**
 * Reads one policy value (a parsed YAML mapping or an API body): validates it
 * against schemas/policy.schema.json, runs the checks beyond the schema (the
 * condition is parsed and type-checked, currency codes, size), and normalises it
 * (defaults filled in, an id derived from the name when absent). Problems are
 * returned, never thrown, all at once.
 *
 * @param value - the policy value.
 * @param base - JSON pointer of the policy inside its document (`''` for a lone
 *   policy, `/policies/3` in a list); it prefixes the diagnostics' `path`.
 * @param locator - source positions of the YAML document (from {@link readYaml}), so
 *   that diagnostics carry `file`, `line` and `col`.
 * @param generateId - called for an id when the value has neither `id` nor `name`.
 * @returns `items`: the normalised policy with its parsed condition and origin
 *   (empty when there is a problem); `diagnostics`: every problem.
 *
 * @example
 * ```ts
 * import { readPolicyValue } from 'agent-authz/compiler';
 *
 * const ok = readPolicyValue({ name: 'read-orders', effect: 'allow', actions: ['orders.read'] });
 * const { policy } = ok.items[0];
 * console.log(policy.id, policy.state, policy.priority); // => pol_read_orders enabled 100
 *
 * const bad = readPolicyValue({ name: 'x', effect: 'maybe', actions: ['orders.read'] });
 * console.log(bad.items.length, bad.diagnostics[0].code, bad.diagnostics[0].path); // => 0 policy.invalid_field /effect
 * ```
 */
export function readPolicyValue(
  value: unknown,
  base = '',
  locator?: SourceLocator,
  generateId?: () => string,
): ReadResult {
  const diagnostics = validatePolicyShape(value, base, locator);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { items: [], diagnostics };
  // The checks beyond the schema run even when the shape is wrong, so every problem shows at once.
  const record = value as Record<string, unknown>;
  const checked = checkPolicy(record, base, locator);
  diagnostics.push(...checked.diagnostics);
  if (diagnostics.length > 0) return { items: [], diagnostics };
  const pos = locator?.value(base);
  const origin: PolicyOrigin = {
    pointer: base,
    ...(locator ? { file: locator.file, line: pos!.line, col: pos!.col, locator } : {}),
  };
  return {
    items: [{ policy: normalizePolicy(record, generateId), condition: checked.condition, origin }],
    diagnostics: [],
  };
}

/**
 * Reads a document holding one policy, or `policies:` with a list of them (each
 * read with {@link readPolicyValue}). Problems are returned, never thrown.
 *
 * @param value - the document's value (parsed YAML or JSON).
 * @param locator - source positions of the document, for `file:line:col` in diagnostics.
 * @returns the read policies and every problem of every policy.
 *
 * @example
 * ```ts
 * import { readPolicyDocument } from 'agent-authz/compiler';
 *
 * const { items, diagnostics } = readPolicyDocument({
 *   policies: [
 *     { name: 'read-orders', effect: 'allow', actions: ['orders.read'] },
 *     { name: 'no-deletes', effect: 'deny', actions: ['*.delete'] },
 *   ],
 * });
 * console.log(items.map((i) => i.policy.id).join(), diagnostics.length); // => pol_read_orders,pol_no_deletes 0
 * ```
 */
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

/**
 * Reads every policy of one YAML file (every document of it, each read with
 * {@link readPolicyDocument}); diagnostics carry the file's name, line and
 * column. Problems (YAML syntax included) are returned, never thrown. This
 * checks each policy alone; {@link compileSources} also checks the set.
 *
 * @param source - `{ file, text }`; `file` names the file in diagnostics.
 * @returns the read policies and the diagnostics.
 *
 * @example
 * ```ts
 * import { readPolicySource } from 'agent-authz/compiler';
 *
 * const text = 'name: refunds\neffect: allow\nactions: [payments.refund]\ncondition: amount <= "50"\n';
 * const { diagnostics } = readPolicySource({ file: 'refunds.yaml', text });
 * const d = diagnostics[0];
 * console.log(`${d.file}:${d.line}:${d.col} ${d.code}`); // => refunds.yaml:4:19 condition.type
 * ```
 */
export function readPolicySource(source: SourceFile): ReadResult {
  const { documents, diagnostics } = readYamlFast(source);
  const items: ReadPolicy[] = [];
  for (const doc of documents) {
    const r = readPolicyDocument(doc.value, doc.locator);
    items.push(...r.items);
    diagnostics.push(...r.diagnostics);
  }
  return { items, diagnostics };
}
