/**
 * Schema validation of policy values (from YAML files or API bodies) against
 * schemas/policy.schema.json, with every problem reported at once as a diagnostic
 * that names the offending value by JSON pointer (and by line:col when a
 * SourceLocator is given).
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { loadSchema } from '../schemas.js';
import type { SourceLocator } from './source.js';

let validator: ValidateFunction | undefined;

function policyValidator(): ValidateFunction {
  if (validator) return validator;
  const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addSchema(loadSchema('policy'));
  validator = ajv.getSchema('https://agent-authz.dev/schemas/policy.schema.json#/$defs/policy')!;
  return validator;
}

const POLICY_FIELDS = [
  'id',
  'name',
  'description',
  'state',
  'priority',
  'effect',
  'agents',
  'actions',
  'resources',
  'condition',
  'rate_limit',
  'budget',
  'approval',
  'labels',
];

/**
 * Validates the shape of one policy value against schemas/policy.schema.json
 * (fields, types, formats), every problem at once; the condition and the other
 * checks beyond the schema are {@link readPolicyValue}'s. Never throws.
 *
 * @param value - the policy value.
 * @param base - JSON pointer of the policy within its document ('' for a lone
 *   policy, `/policies/3` in a list); diagnostics carry pointers relative to the
 *   policy itself in `path`.
 * @param locator - source positions, for `file:line:col` in diagnostics.
 * @returns the problems; `[]` when the shape is valid.
 *
 * @example
 * ```ts
 * import { validatePolicyShape } from 'agent-authz/compiler';
 *
 * console.log(validatePolicyShape({ name: 'a', effect: 'allow', actions: ['orders.read'] }).length); // => 0
 * const problems = validatePolicyShape({ name: 'a', effect: 'allow', actions: [], priority: 'high' });
 * console.log(problems.map((d) => d.path).sort().join()); // => /actions,/priority
 * ```
 */
export function validatePolicyShape(value: unknown, base = '', locator?: SourceLocator): Diagnostic[] {
  const validate = policyValidator();
  if (validate(value)) return [];
  const errors = pruneErrors(validate.errors ?? []);
  return errors.map((error) => toDiagnostic(error, base, locator));
}

/** Drops errors that only restate a more precise one (e.g. the anyOf wrapper). */
function pruneErrors(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  const out: ErrorObject[] = [];
  for (const e of errors) {
    const key = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(e);
  }
  return out;
}

function toDiagnostic(error: ErrorObject, base: string, locator?: SourceLocator): Diagnostic {
  let path = error.instancePath;
  let message: string;
  let atKey = false;
  const field = describePath(path);
  switch (error.keyword) {
    case 'additionalProperties': {
      const name = String((error.params as { additionalProperty: string }).additionalProperty);
      path = `${path}/${name}`;
      atKey = true;
      const known =
        path.split('/').length === 2
          ? POLICY_FIELDS
          : Object.keys((error.parentSchema as { properties?: object })?.properties ?? {});
      const hint = suggest(name, known);
      message = `unknown field "${name}"${field ? ` in ${field}` : ''}${hint ? ` (did you mean "${hint}"?)` : `; expected one of ${known.join(', ')}`}`;
      break;
    }
    case 'required': {
      const name = String((error.params as { missingProperty: string }).missingProperty);
      message = `missing required field "${name}"${field ? ` in ${field}` : ''}`;
      break;
    }
    case 'type':
      message = `${field || 'policy'} must be ${article(String((error.params as { type: string }).type))}, not ${typeName(error.data)}`;
      break;
    case 'enum':
      message = `${field} must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}, not ${JSON.stringify(error.data)}`;
      break;
    case 'pattern': {
      const custom = (error.parentSchema as Record<string, unknown> | undefined)?.['x-message'];
      message = `${field} ${JSON.stringify(error.data)} ${typeof custom === 'string' ? custom : `must match ${String((error.params as { pattern: string }).pattern)}`}`;
      break;
    }
    case 'minItems':
      message = `${field} must not be empty (omit it instead to mean any)`;
      break;
    case 'minLength':
      message = `${field} must not be empty`;
      break;
    case 'minProperties':
      message = `${field} must set at least one window`;
      break;
    default:
      message = `${field || 'policy'} ${error.message ?? 'is invalid'}`;
  }
  const fullPointer = base + path;
  const pos = locator ? (atKey ? locator.key(fullPointer) : locator.value(fullPointer)) : undefined;
  return {
    severity: 'error',
    code: 'policy.invalid_field',
    message,
    path: fullPointer || '/',
    ...(locator ? { file: locator.file, line: pos!.line, col: pos!.col } : {}),
  };
}

/** `/budget/limit` -> `budget.limit`; `/actions/0` -> `actions[0]`. */
export function describePath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}

function article(type: string): string {
  return type === 'integer' || type === 'array' || type === 'object' ? `an ${type}` : `a ${type}`;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'number' && !Number.isInteger(value)) return `the number ${value}`;
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** The closest known name within edit distance 2, for "did you mean". */
export function suggest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}
