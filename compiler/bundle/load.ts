/**
 * Loading a bundle: format and version check, schema validation, hash check, each
 * policy's condition parsed, rows rebuilt in their recorded order (checked to be
 * the rank order) and the serialised trie restored. Linear in the bundle's size.
 */
import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { checkPolicy } from '../policy/check.js';
import type { Policy } from '../policy/types.js';
import { loadSchema } from '../schemas.js';
import { ROWS_PER_STEP, runSteps, tableFromRows, type DecisionTable } from '../table/build.js';
import { buildRow, comparePolicies, type PolicyRow } from '../table/rows.js';
import { canonicalJson } from './canonical-json.js';
import { probesById } from './write.js';
import { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, type Bundle } from './format.js';
import { deserializeTrieSteps, TableFormatError } from './serialize.js';

interface BundleValidators {
  /** The whole bundle (its `policies` are checked one by one with `policy`). */
  bundle: ValidateFunction;
  /** One element of `policies`, as the bundle schema has it. */
  policy: ValidateFunction;
}

let validators: BundleValidators | undefined;

function bundleValidators(): BundleValidators {
  if (validators) return validators;
  const ajv = new Ajv2020({ allErrors: false, strict: true });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addSchema(loadSchema('policy'));
  const bundle = ajv.compile(loadSchema('bundle'));
  const policy = ajv.compile({ $ref: 'https://agent-authz.dev/schemas/bundle.schema.json#/properties/policies/items' });
  validators = { bundle, policy };
  return validators;
}

function schemaProblem(e: { instancePath: string; message?: string }, prefix = ''): LoadedBundle {
  const path = prefix + e.instancePath || '/';
  return problem(`bundle does not match schemas/bundle.schema.json: ${path} ${e.message ?? 'is invalid'}`, path);
}

/**
 * A bundle's `probes`, when it has them, must be those of its conditions (a
 * bundle written before history has none: they are computed from the conditions).
 */
function checkProbes(bundle: Bundle, rows: readonly PolicyRow[]): LoadedBundle | undefined {
  if (bundle.probes === undefined) return undefined;
  const expected = probesById(rows) ?? {};
  for (const id of Object.keys(bundle.probes)) {
    if (!Object.hasOwn(expected, id))
      return problem(`probes lists policy ${id}, whose condition reads no history`, `/probes/${id}`);
  }
  for (const [id, probes] of Object.entries(expected)) {
    const listed = bundle.probes[id];
    if (listed === undefined || canonicalJson(listed) !== canonicalJson(probes)) {
      return problem(
        `the history probes of policy ${id} do not match its condition; compile the policies again`,
        `/probes/${id}`,
      );
    }
  }
  return undefined;
}

export type LoadedBundle = { ok: true; bundle: Bundle; table: DecisionTable } | { ok: false; problems: Diagnostic[] };

function problem(message: string, path = '/'): LoadedBundle {
  return { ok: false, problems: [{ severity: 'error', code: 'bundle.invalid', message, path }] };
}

/**
 * Loads a bundle (the parsed JSON of a file {@link createBundle} wrote): checks
 * its format and version, validates it against schemas/bundle.schema.json,
 * recomputes its hash, checks every policy (conditions parsed and type-checked),
 * that the table's rows are in rank order and that its history probes (when
 * listed) are its conditions', then restores the index. Linear in
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
  return runSteps(loadBundleSteps(value));
}

/**
 * {@link loadBundle} in steps of {@link ROWS_PER_STEP} policies (schema, hash,
 * checks and index alike), so that a service can load a large bundle in slices
 * between the requests it serves; `runSteps` runs it straight through.
 *
 * @example
 * ```ts
 * import { compileSources, createBundle, loadBundleSteps, runSteps } from 'agent-authz/compiler';
 *
 * const { table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: [orders.read]\n' }]);
 * const bundle = JSON.parse(JSON.stringify(createBundle(table)));
 * // A service runs the steps in slices (runtime/shared/sliced.ts); runSteps runs them straight through.
 * const loaded = runSteps(loadBundleSteps(bundle));
 * console.log(loaded.ok, loaded.ok && loaded.table.rows.length); // => true 1
 * ```
 */
export function* loadBundleSteps(value: unknown): Generator<void, LoadedBundle> {
  if (value === null || typeof value !== 'object' || (value as { format?: unknown }).format !== BUNDLE_FORMAT) {
    return problem(
      `not an agent-authz bundle (expected "format": "${BUNDLE_FORMAT}"; write one with authz compile)`,
      '/format',
    );
  }
  const version = (value as { format_version?: unknown }).format_version;
  if (version !== BUNDLE_FORMAT_VERSION) {
    const which = typeof version === 'number' && version > BUNDLE_FORMAT_VERSION ? 'newer' : 'older';
    return problem(
      `bundle format version ${JSON.stringify(version)} is ${which} than the version this runtime reads (${BUNDLE_FORMAT_VERSION}); compile the policies again with a matching authz`,
      '/format_version',
    );
  }
  // The schema: everything but the policies at once, then each policy.
  const validate = bundleValidators();
  const listed = (value as { policies?: unknown }).policies;
  if (!validate.bundle(Array.isArray(listed) ? { ...value, policies: [] } : value))
    return schemaProblem(validate.bundle.errors![0]!);
  const bundle = value as Bundle;
  // The hash of the canonical JSON of the policies, `[` + each policy's canonical JSON joined by `,` + `]`, fed piece by piece.
  const hasher = createHash('sha256').update('[');
  for (const [i, policy] of bundle.policies.entries()) {
    if (!validate.policy(policy)) return schemaProblem(validate.policy.errors![0]!, `/policies/${i}`);
    hasher.update(i === 0 ? canonicalJson(policy) : `,${canonicalJson(policy)}`);
    if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  const hash = `sha256:${hasher.update(']').digest('hex')}`;
  if (hash !== bundle.hash)
    return problem(
      `bundle hash does not match its policies (expected ${bundle.hash}, computed ${hash}); the file was altered after compile`,
      '/hash',
    );
  const problems: Diagnostic[] = [];
  const rows: PolicyRow[] = [];
  const used = new Set<number>();
  const ids = new Set<string>();
  for (const [i, position] of bundle.table.rows.entries()) {
    const policy: Policy | undefined = bundle.policies[position];
    if (policy === undefined || used.has(position))
      return problem(`table row ${i} refers to policy ${position}, which is missing or used twice`, `/table/rows/${i}`);
    used.add(position);
    if (ids.has(policy.id)) return problem(`duplicate policy id ${policy.id}`, `/policies/${position}/id`);
    ids.add(policy.id);
    const checked = checkPolicy(policy as unknown as Record<string, unknown>, `/policies/${position}`);
    problems.push(...checked.diagnostics);
    const previous = rows[i - 1];
    if (previous && comparePolicies(previous.policy, policy) >= 0)
      return problem(`table rows are not in rank order at row ${i}`, `/table/rows/${i}`);
    rows.push(buildRow(i, policy, checked.condition));
    if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  if (used.size !== bundle.policies.length) return problem('the table does not cover every policy', '/table/rows');
  if (problems.length > 0) return { ok: false, problems };
  const probesProblem = checkProbes(bundle, rows);
  if (probesProblem) return probesProblem;
  try {
    return { ok: true, bundle, table: tableFromRows(rows, yield* deserializeTrieSteps(bundle.table, rows)) };
  } catch (e) {
    if (e instanceof TableFormatError) return problem(e.message, '/table');
    throw e;
  }
}
