/**
 * A policy body as the policy routes receive it: a JSON value, or YAML text
 * (`Content-Type: application/yaml` or `text/yaml`) read with the compiler's
 * YAML reader, so that every problem carries its line and column besides its
 * JSON pointer. POST and PUT refuse a body with any error (400
 * validation.invalid_policy, every problem in details); POST
 * /v1/policies/validate reports them (runtime/domain/policy-validation.ts).
 */
import {
  hasErrors,
  type Diagnostic,
  canonicalPolicy,
  readPolicyValue,
  type ReadPolicy,
  readYaml,
  type SourceLocator,
  type Policy,
} from '../../compiler/index.js';
import { diagnosticsToDetails } from './policy-sets.js';
import { InvalidFieldError, InvalidPolicyError, type ErrorDetail } from '../errors/api-error.js';
import { newId } from '../ids.js';
import { unstorableInput } from '../shared/storable.js';

/** The name a YAML body goes by in diagnostics (the API never shows it). */
const BODY_FILE = 'body.yaml';

export interface PolicyInput {
  format: 'json' | 'yaml';
  /** The parsed body; undefined when the YAML could not be read. */
  value: unknown;
  /** Where each value of a YAML body came from. */
  locator?: SourceLocator;
  /** YAML syntax errors and warnings, and a body that is not exactly one document. */
  diagnostics: Diagnostic[];
}

const yamlProblem = (code: string, message: string, at = { line: 1, col: 1 }): Diagnostic => ({
  severity: 'error',
  code,
  message,
  path: '/',
  file: BODY_FILE,
  line: at.line,
  col: at.col,
});

/**
 * The body of a request: `yaml` when it was sent as YAML (its text). A YAML
 * value the store could not hold (a NUL or unpaired surrogate from an escape,
 * `.inf`, nesting over 64 levels) is refused like the same JSON: 400
 * validation.invalid_field, here with its line and column.
 */
export function policyInput(body: unknown, yaml: boolean): PolicyInput {
  if (!yaml) return { format: 'json', value: body, diagnostics: [] };
  const input = readYamlBody(typeof body === 'string' ? body : '');
  if (input.value !== undefined) {
    const problem = unstorableInput(input.value, 'body');
    if (problem) {
      const pos = input.locator!.value(problem.path === '/' ? '' : problem.path);
      throw new InvalidFieldError(problem.message, { details: [{ ...problem, line: pos.line, column: pos.col }] });
    }
  }
  return input;
}

function readYamlBody(text: string): PolicyInput {
  let read: ReturnType<typeof readYaml>;
  try {
    read = readYaml({ file: BODY_FILE, text });
  } catch (error) {
    // The YAML library recurses per nesting level: thousands of nested brackets overflow the stack.
    if (error instanceof RangeError)
      return {
        format: 'yaml',
        value: undefined,
        diagnostics: [yamlProblem('yaml.syntax', 'the YAML is nested too deeply to read')],
      };
    throw error;
  }
  const diagnostics: Diagnostic[] = read.diagnostics.map((d) => ({ ...d, path: d.path ?? '/' }));
  if (hasErrors(diagnostics)) return { format: 'yaml', value: undefined, diagnostics };
  const [first, second] = read.documents;
  if (!first) {
    diagnostics.push(yamlProblem('policy.invalid_field', 'the body is empty: send one policy as a YAML mapping'));
    return { format: 'yaml', value: undefined, diagnostics };
  }
  if (second) {
    const message = `the body holds ${read.documents.length} YAML documents; send one policy (one document) per request`;
    diagnostics.push(yamlProblem('policy.invalid_field', message, second.locator.value('')));
    return { format: 'yaml', value: undefined, diagnostics };
  }
  return { format: 'yaml', value: first.value, locator: first.locator, diagnostics };
}

/** Line and column (as `file`, `line`, `col` of a diagnostic) of the value, or the key, at `pointer`; nothing for JSON. */
export function positionIn(
  locator: SourceLocator | undefined,
  pointer: string,
  key = false,
): Pick<Diagnostic, 'file' | 'line' | 'col'> {
  if (!locator) return {};
  const pos = key ? locator.key(pointer) : locator.value(pointer);
  return { file: locator.file, line: pos.line, col: pos.col };
}

/**
 * Reads the body's policy with the compiler: every problem as a diagnostic
 * (errors, and the YAML reader's warnings). `pathId` is the id of PUT's path,
 * which a body's id must equal; without one and without an id in the body the
 * policy gets a generated opaque id (ids derived from the name are for files).
 */
export function readBodyPolicy(
  input: PolicyInput,
  nowMs: number,
  pathId?: string,
): { item?: ReadPolicy; diagnostics: Diagnostic[] } {
  const diagnostics = [...input.diagnostics];
  if (hasErrors(diagnostics)) return { diagnostics };
  const { value, locator } = input;
  const error = (message: string, pointer: string, key = false): Diagnostic => ({
    severity: 'error',
    code: 'policy.invalid_field',
    message,
    path: pointer || '/',
    ...positionIn(locator, pointer, key),
  });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    diagnostics.push(
      error(
        input.format === 'yaml'
          ? 'the body must be a YAML mapping describing a policy'
          : 'must be a JSON object describing a policy',
        '',
      ),
    );
    return { diagnostics };
  }
  const record = { ...(value as Record<string, unknown>) };
  if (Object.hasOwn(record, 'policies')) {
    diagnostics.push(
      error(
        'a policies: list is for policy files; the API takes one policy per request (a whole set: PUT /v1/bundle)',
        '/policies',
        true,
      ),
    );
    return { diagnostics };
  }
  if (pathId !== undefined) {
    if (record.id !== undefined && record.id !== pathId) {
      diagnostics.push(
        error(
          `the body's id ${JSON.stringify(record.id)} differs from the path's ${pathId}; it must equal the id in the path`,
          '/id',
        ),
      );
    }
    record.id = pathId;
  }
  if (record.id === undefined) record.id = newId('pol', nowMs);
  const read = readPolicyValue(record, '', locator);
  diagnostics.push(...read.diagnostics);
  return hasErrors(diagnostics) ? { diagnostics } : { item: read.items[0]!, diagnostics };
}

/** `invalid policy: <first problem>`, with its line and column when it has them. */
function invalidPolicy(details: ErrorDetail[]): InvalidPolicyError {
  const first = details[0];
  const where = first?.line !== undefined ? `line ${first.line}, column ${first.column}: ` : '';
  return new InvalidPolicyError(`invalid policy: ${where}${first?.message ?? 'unknown problem'}`, { details });
}

/** The body's policy in canonical form, or 400 validation.invalid_policy with every problem (line and column too, for YAML). */
export function policyFromInput(input: PolicyInput, nowMs: number, pathId?: string): Policy {
  const { item, diagnostics } = readBodyPolicy(input, nowMs, pathId);
  if (!item) throw invalidPolicy(diagnosticsToDetails(diagnostics));
  return canonicalPolicy(item.policy);
}

/** A problem found against the environment (a name in use) as the same 400. */
export function invalidPolicyAt(diagnostic: Diagnostic): InvalidPolicyError {
  return invalidPolicy(diagnosticsToDetails([diagnostic]));
}
