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
  /**
   * Days of decisions the decision log keeps (the service's AUTHZ_RETENTION_DAYS;
   * null: forever). When given, a history window longer than it is a lint
   * (`lint.history_beyond_retention`); absent: unknown, no such lint.
   */
  retentionDays?: number | null;
}

export interface CompileResult {
  /** Normalised policies, in the order they were read. */
  policies: Policy[];
  origins: Map<string, PolicyOrigin>;
  /** Present when there are no errors. */
  table?: DecisionTable;
  diagnostics: Diagnostic[];
}

/**
 * Compiles policy files: reads each YAML source (one policy, or `policies:` with a
 * list; several documents per file allowed), validates every policy against the
 * schema and the condition language, checks that ids and names are unique across
 * all files, builds the decision table and runs the lints. Bad input never
 * throws: every problem of every file comes back in `diagnostics`, sorted by
 * file, line and column.
 *
 * @param sources - the files as `{ file, text }`; `file` only names the file in diagnostics.
 * @param options - `strict: true` turns lint warnings into errors; `lint: false` skips the lints.
 * @returns the normalised policies (in reading order), where each came from, the
 *   diagnostics, and `table`, present only when there is no error.
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import { compileSources, hasErrors } from 'agent-authz/compiler';
 *
 * const file = 'examples/support/policies.yaml';
 * const result = compileSources([{ file, text: readFileSync(file, 'utf8') }]);
 * console.log(hasErrors(result.diagnostics), result.policies.length, result.table.rows.length); // => false 8 8
 *
 * const bad = compileSources([{ file: 'bad.yaml', text: 'name: x\neffect: maybe\nactions: [orders.read]\n' }]);
 * const d = bad.diagnostics[0];
 * console.log(`${d.file}:${d.line}:${d.col} ${d.code}`, bad.table); // => bad.yaml:2:9 policy.invalid_field undefined
 * ```
 */
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

/**
 * Compiles policies already read with {@link readPolicyValue} (the runtime's API
 * path, where policies arrive as JSON bodies): the same checks, table and lints as
 * {@link compileSources}, without the YAML step. Never throws on bad input.
 *
 * @param items - read policies (`readPolicyValue(...).items`, concatenated).
 * @param options - as for compileSources.
 * @returns as compileSources; `table` is present only when there is no error.
 *
 * @example
 * ```ts
 * import { compileItems, readPolicyValue } from 'agent-authz/compiler';
 *
 * const a = readPolicyValue({ name: 'read-orders', effect: 'allow', actions: ['orders.read'] });
 * const b = readPolicyValue({ name: 'read-orders', effect: 'deny', actions: ['orders.*'] });
 * const result = compileItems([...a.items, ...b.items]);
 * console.log(result.diagnostics.map((d) => d.code).join()); // => policy.duplicate_name
 * ```
 */
export function compileItems(items: readonly ReadPolicy[], options: CompileOptions = {}): CompileResult {
  return finish(items, [], options);
}

/**
 * {@link compileItems} in steps (see {@link buildTableSteps}): the generator
 * pauses every few hundred rows so a service can recompile a large set in slices
 * between its requests. Run it to its end (by hand, or with {@link runSteps}); the
 * result is the same as compileItems'.
 *
 * @param items - read policies, as for compileItems.
 * @param options - as for compileSources.
 * @returns a generator whose return value is the CompileResult.
 *
 * @example
 * ```ts
 * import { setImmediate } from 'node:timers/promises';
 * import { compileItemsSteps, readPolicyValue } from 'agent-authz/compiler';
 *
 * const { items } = readPolicyValue({ name: 'read-orders', effect: 'allow', actions: ['orders.read'] });
 * const steps = compileItemsSteps(items);
 * let next = steps.next();
 * while (!next.done) {
 *   await setImmediate(); // let other work run between slices
 *   next = steps.next();
 * }
 * console.log(next.value.table.rows.length); // => 1
 * ```
 */
export function* compileItemsSteps(
  items: readonly ReadPolicy[],
  options: CompileOptions = {},
): Generator<void, CompileResult> {
  return yield* finishSteps(items, [], options);
}

function finish(items: readonly ReadPolicy[], diagnostics: Diagnostic[], options: CompileOptions): CompileResult {
  return runSteps(finishSteps(items, diagnostics, options));
}

function* finishSteps(
  items: readonly ReadPolicy[],
  diagnostics: Diagnostic[],
  options: CompileOptions,
): Generator<void, CompileResult> {
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
    for (const d of lintTable(table, origins, { retentionDays: options.retentionDays }))
      diagnostics.push(options.strict ? { ...d, severity: 'error' } : d);
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
