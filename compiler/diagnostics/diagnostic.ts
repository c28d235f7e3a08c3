/** A problem found while reading, validating or linting policies. */
export type Severity = 'error' | 'warning';

export interface Diagnostic {
  severity: Severity;
  /** Stable machine-readable code, e.g. `policy.invalid_field`, `condition.syntax`, `lint.shadowed`. */
  code: string;
  message: string;
  /** File the problem is in (as given on the command line), when it came from a file. */
  file?: string;
  /** 1-based line and column of the offending node, when known. */
  line?: number;
  col?: number;
  /** JSON pointer of the offending value inside the policy document, e.g. `/actions/0`. */
  path?: string;
}

export function errorsIn(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  return diagnostics.filter((d) => d.severity === 'error');
}

/**
 * Whether any diagnostic is an error (warnings, e.g. lints, do not count).
 *
 * @param diagnostics - diagnostics from compiling, reading or loading.
 * @returns true when at least one has `severity: 'error'`.
 *
 * @example
 * ```ts
 * import { compileSources, hasErrors } from 'agent-authz/compiler';
 *
 * const { diagnostics } = compileSources([{ file: 'p.yaml', text: 'name: x\neffect: allow\nactions: [Orders.Read]\n' }]);
 * console.log(hasErrors(diagnostics), hasErrors([{ severity: 'warning', code: 'lint.shadowed', message: '...' }])); // => true false
 * ```
 */
export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}

/** Sorts by file, line, column, then message, so output is stable. */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics.sort(
    (a, b) =>
      (a.file ?? '').localeCompare(b.file ?? '') ||
      (a.line ?? 0) - (b.line ?? 0) ||
      (a.col ?? 0) - (b.col ?? 0) ||
      a.message.localeCompare(b.message),
  );
}
