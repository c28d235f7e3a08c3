/** The public forms of what the compiler says of a policy: POST /v1/policies/validate, and the warnings POST /v1/policies answers. */
import type { Diagnostic, Severity } from '../../compiler/index.js';
import type { PolicyValidation } from '../domain/policy-validation.js';

/** One problem or lint of a policy, as answered. */
export interface ValidationDiagnostic {
  severity: Severity;
  /** The compiler's code: `yaml.syntax`, `policy.invalid_field`, `condition.*`, `policy.duplicate_name`, `lint.*`. */
  code: string;
  message: string;
  /** JSON pointer into the policy (`/` for the whole of it). */
  path: string;
  /** 1-based, for a YAML body. */
  line?: number;
  column?: number;
}

/**
 * A diagnostic as answered: its path (`/` for the whole policy), and its line and column for a YAML body.
 *
 * @example
 * diagnosticResource({ severity: 'error', code: 'yaml.syntax', message: 'bad indentation', line: 3 }); // => { severity: 'error', code: 'yaml.syntax', message: 'bad indentation', path: '/', line: 3, column: 1 }
 */
export function diagnosticResource(d: Diagnostic): ValidationDiagnostic {
  return {
    severity: d.severity,
    code: d.code,
    message: d.message,
    path: d.path ?? '/',
    ...(d.line !== undefined ? { line: d.line, column: d.col ?? 1 } : {}),
  };
}

/**
 * POST /v1/policies/validate.
 *
 * @example
 * policyValidationResource({ valid: true, diagnostics: [] }); // => { object: 'policy_validation', valid: true, diagnostics: [] }
 */
export function policyValidationResource(v: PolicyValidation): Record<string, unknown> {
  return { object: 'policy_validation', valid: v.valid, diagnostics: v.diagnostics.map(diagnosticResource) };
}
