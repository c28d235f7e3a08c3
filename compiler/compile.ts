/**
 * The compiler pipeline: policy sources -> validated, normalised policies ->
 * cross-policy checks -> decision table -> lints. Every problem of every file is
 * collected into one list.
 */
import type { ConditionAst } from './condition/index.js';
import { hasErrors, sortDiagnostics, type Diagnostic } from './diagnostics/diagnostic.js';
import { lintTable } from './lint/lint.js';
import { readPolicySource, type PolicyOrigin, type ReadPolicy } from './policy/read.js';
import type { SourceFile } from './policy/source.js';
import type { Policy } from './policy/types.js';
import { buildTableSteps, runSteps, type DecisionTable } from './table/build.js';

export interface CompileOptions {
  /** Lints become errors. */
  strict?: boolean;
  /** Run the lints (default true). */
  lint?: boolean;
}

export interface CompileResult {
  /** Normalised policies, in the order they were read. */
  policies: Policy[];
  origins: Map<string, PolicyOrigin>;
  /** Present when there are no errors. */
  table?: DecisionTable;
  diagnostics: Diagnostic[];
}

export function compileSources(sources: readonly SourceFile[], options: CompileOptions = {}): CompileResult {
  const items: ReadPolicy[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const source of sources) {
    const r = readPolicySource(source);
    items.push(...r.items);
    diagnostics.push(...r.diagnostics);
  }
  return finish(items, diagnostics, options);
}

/** Compiles already-read policies (the runtime's API path uses this). */
export function compileItems(items: readonly ReadPolicy[], options: CompileOptions = {}): CompileResult {
  return finish(items, [], options);
}

/**
 * compileItems in steps (see buildTableSteps): the runtime recompiles a large set
 * in slices between requests. The result is the same as compileItems'.
 */
export function* compileItemsSteps(items: readonly ReadPolicy[], options: CompileOptions = {}): Generator<void, CompileResult> {
  return yield* finishSteps(items, [], options);
}

function finish(items: readonly ReadPolicy[], diagnostics: Diagnostic[], options: CompileOptions): CompileResult {
  return runSteps(finishSteps(items, diagnostics, options));
}

function* finishSteps(items: readonly ReadPolicy[], diagnostics: Diagnostic[], options: CompileOptions): Generator<void, CompileResult> {
  diagnostics.push(...checkUnique(items));
  yield;
  const policies = items.map((i) => i.policy);
  const origins = new Map<string, PolicyOrigin>();
  const conditions = new Map<string, ConditionAst>();
  for (const item of items) {
    if (!origins.has(item.policy.id)) origins.set(item.policy.id, item.origin);
    if (item.condition) conditions.set(item.policy.id, item.condition);
  }
  if (hasErrors(diagnostics)) return { policies, origins, diagnostics: sortDiagnostics(diagnostics) };
  const table = yield* buildTableSteps(policies, conditions);
  if (options.lint !== false) {
    for (const d of lintTable(table, origins)) diagnostics.push(options.strict ? { ...d, severity: 'error' } : d);
  }
  const result: CompileResult = { policies, origins, diagnostics: sortDiagnostics(diagnostics) };
  if (!hasErrors(diagnostics)) result.table = table;
  return result;
}

/** Ids and names must be unique across every file. */
function checkUnique(items: readonly ReadPolicy[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const field of ['id', 'name'] as const) {
    const first = new Map<string, ReadPolicy>();
    for (const item of items) {
      const key = item.policy[field];
      const earlier = first.get(key);
      if (!earlier) {
        first.set(key, item);
        continue;
      }
      // An id derived from a duplicated name is reported once, as the name.
      if (field === 'id' && earlier.policy.name === item.policy.name) continue;
      const o = item.origin;
      const pos = o.locator?.value(`${o.pointer}/${field}`) ?? { line: o.line, col: o.col };
      const e = earlier.origin;
      out.push({
        severity: 'error',
        code: field === 'id' ? 'policy.duplicate_id' : 'policy.duplicate_name',
        message: `duplicate policy ${field} "${key}" (first defined ${e.file ? `at ${e.file}:${e.line}:${e.col}` : 'earlier'})`,
        path: `${o.pointer}/${field}`,
        ...(o.file ? { file: o.file, line: pos.line, col: pos.col } : {}),
      });
    }
  }
  return out;
}
