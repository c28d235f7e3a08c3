/**
 * Loading a bundle: format and version check, schema validation, hash check, each
 * policy's condition parsed, rows rebuilt in their recorded order (checked to be
 * the rank order) and the serialised trie restored. Linear in the bundle's size.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { checkPolicy } from '../policy/check.js';
import type { Policy } from '../policy/types.js';
import { loadSchema } from '../schemas.js';
import { tableFromRows, type DecisionTable } from '../table/build.js';
import { buildRow, comparePolicies, type PolicyRow } from '../table/rows.js';
import { canonicalJson, sha256Hex } from './canonical-json.js';
import { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, type Bundle } from './format.js';
import { deserializeTrie, TableFormatError } from './serialize.js';

let validator: ValidateFunction | undefined;

function bundleValidator(): ValidateFunction {
  if (validator) return validator;
  const ajv = new Ajv2020({ allErrors: false, strict: true });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addSchema(loadSchema('policy'));
  validator = ajv.compile(loadSchema('bundle'));
  return validator;
}

export type LoadedBundle = { ok: true; bundle: Bundle; table: DecisionTable } | { ok: false; problems: Diagnostic[] };

function problem(message: string, path = '/'): LoadedBundle {
  return { ok: false, problems: [{ severity: 'error', code: 'bundle.invalid', message, path }] };
}

/**
 * Loads a bundle (the parsed JSON of a file {@link createBundle} wrote): checks
 * its format and version, validates it against schemas/bundle.schema.json,
 * recomputes its hash, checks every policy (conditions parsed and type-checked)
 * and that the table's rows are in rank order, then restores the index. Linear in
 * the bundle's size. A bad bundle is a value, not an exception.
 *
 * @param value - the parsed bundle JSON (anything: it is checked).
 * @returns `{ ok: true, bundle, table }`, or `{ ok: false, problems }` with
 *   `bundle.invalid` (or policy) diagnostics naming what is wrong.
 *
 * @example
 * ```ts
 * import { compileSources, createBundle, evaluate, loadBundle } from 'agent-authz/compiler';
 *
 * const { table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: [orders.read]\n' }]);
 * const text = JSON.stringify(createBundle(table)); // what authz compile -o writes
 *
 * const loaded = loadBundle(JSON.parse(text));
 * if (!loaded.ok) throw new Error(loaded.problems[0].message);
 * console.log(evaluate(loaded.table, { agent_id: 'bot', action: 'orders.read' }).effect); // => allow
 *
 * const altered = loadBundle({ ...JSON.parse(text), hash: `sha256:${'0'.repeat(64)}` });
 * console.log(altered.ok, altered.ok || altered.problems[0].code); // => false bundle.invalid
 * ```
 */
export function loadBundle(value: unknown): LoadedBundle {
  if (value === null || typeof value !== 'object' || (value as { format?: unknown }).format !== BUNDLE_FORMAT) {
    return problem(`not an agent-authz bundle (expected "format": "${BUNDLE_FORMAT}"; write one with authz compile)`, '/format');
  }
  const version = (value as { format_version?: unknown }).format_version;
  if (version !== BUNDLE_FORMAT_VERSION) {
    const which = typeof version === 'number' && version > BUNDLE_FORMAT_VERSION ? 'newer' : 'older';
    return problem(
      `bundle format version ${JSON.stringify(version)} is ${which} than the version this runtime reads (${BUNDLE_FORMAT_VERSION}); compile the policies again with a matching authz`,
      '/format_version',
    );
  }
  const validate = bundleValidator();
  if (!validate(value)) {
    const e = validate.errors![0]!;
    return problem(`bundle does not match schemas/bundle.schema.json: ${e.instancePath || '/'} ${e.message ?? 'is invalid'}`, e.instancePath || '/');
  }
  const bundle = value as Bundle;
  const hash = `sha256:${sha256Hex(canonicalJson(bundle.policies))}`;
  if (hash !== bundle.hash) return problem(`bundle hash does not match its policies (expected ${bundle.hash}, computed ${hash}); the file was altered after compile`, '/hash');
  const problems: Diagnostic[] = [];
  const rows: PolicyRow[] = [];
  const used = new Set<number>();
  const ids = new Set<string>();
  for (const [i, position] of bundle.table.rows.entries()) {
    const policy: Policy | undefined = bundle.policies[position];
    if (policy === undefined || used.has(position)) return problem(`table row ${i} refers to policy ${position}, which is missing or used twice`, `/table/rows/${i}`);
    used.add(position);
    if (ids.has(policy.id)) return problem(`duplicate policy id ${policy.id}`, `/policies/${position}/id`);
    ids.add(policy.id);
    const checked = checkPolicy(policy as unknown as Record<string, unknown>, `/policies/${position}`);
    problems.push(...checked.diagnostics);
    const previous = rows[i - 1];
    if (previous && comparePolicies(previous.policy, policy) >= 0) return problem(`table rows are not in rank order at row ${i}`, `/table/rows/${i}`);
    rows.push(buildRow(i, policy, checked.condition));
  }
  if (used.size !== bundle.policies.length) return problem('the table does not cover every policy', '/table/rows');
  if (problems.length > 0) return { ok: false, problems };
  try {
    return { ok: true, bundle, table: tableFromRows(rows, deserializeTrie(bundle.table, rows)) };
  } catch (e) {
    if (e instanceof TableFormatError) return problem(e.message, '/table');
    throw e;
  }
}
