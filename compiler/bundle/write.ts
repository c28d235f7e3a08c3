/** Writing a bundle from a compiled set. */
import { canonicalPolicy } from '../policy/normalize.js';
import type { HistoryProbe } from '../history/probe.js';
import type { Policy } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';
import { compilerVersion } from '../version.js';
import { canonicalJson, sha256Hex } from './canonical-json.js';
import { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, type Bundle } from './format.js';
import { serializeTable } from './serialize.js';

/**
 * The hash of a policy set: `sha256:` + the hex SHA-256 of the canonical JSON
 * ({@link canonicalJson}) of the policies in canonical form, sorted by id. The
 * order the policies are given in does not matter; it equals the `hash` of the
 * bundle {@link createBundle} writes for the same set.
 *
 * @param policies - normalised policies.
 * @returns `sha256:<64 hex digits>`.
 *
 * @example
 * ```ts
 * import { compileSources, createBundle, policySetHash } from 'agent-authz/compiler';
 *
 * const { policies, table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: [orders.read]\n' }]);
 * console.log(policySetHash(policies) === createBundle(table).hash, /^sha256:[0-9a-f]{64}$/.test(policySetHash(policies))); // => true true
 * ```
 */
export function policySetHash(policies: readonly Policy[]): string {
  return `sha256:${sha256Hex(canonicalJson(sortById(policies)))}`;
}

/** The probes of the policies that read history, by id in id order; undefined when none does. */
export function probesById(all: readonly PolicyRow[]): Record<string, HistoryProbe[]> | undefined {
  const rows = all.filter((r) => r.probes.length > 0).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (rows.length === 0) return undefined;
  return Object.fromEntries(
    rows.map((r) => [r.id, r.probes.map((p) => ({ ...p, actions: [...p.actions], match: [...p.match] }))]),
  );
}

function sortById(policies: readonly Policy[]): Policy[] {
  return [...policies].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(canonicalPolicy);
}

/**
 * The bundle artifact of a compiled table (what `authz compile -o` writes and
 * `authz serve --bundle` / `PUT /v1/bundle` load): the format and its version,
 * the policy set's hash, the compiler's version, the policies sorted by id, the
 * history probes of the policies that read history (`probes`, absent when none
 * does), and the serialised index. Write it with `JSON.stringify`; read it back with
 * {@link loadBundle}.
 *
 * @param table - a table from {@link compileSources} or {@link compileItems} (one without errors).
 * @returns the bundle, a plain JSON value.
 *
 * @example
 * ```ts
 * import { writeFileSync, mkdtempSync } from 'node:fs';
 * import { tmpdir } from 'node:os';
 * import { join } from 'node:path';
 * import { compileSources, createBundle } from 'agent-authz/compiler';
 *
 * const { table } = compileSources([{ file: 'p.yaml', text: 'name: reads\neffect: allow\nactions: [orders.read]\n' }]);
 * const bundle = createBundle(table);
 * writeFileSync(join(mkdtempSync(join(tmpdir(), 'authz-')), 'bundle.json'), `${JSON.stringify(bundle)}\n`);
 * console.log(bundle.format, bundle.format_version, bundle.policies[0].id); // => agent-authz.bundle 1 pol_reads
 * ```
 */
export function createBundle(table: DecisionTable): Bundle {
  const policies = sortById(table.rows.map((r) => r.policy));
  const position = new Map(policies.map((p, i) => [p.id, i]));
  const probes = probesById(table.rows);
  return {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    hash: `sha256:${sha256Hex(canonicalJson(policies))}`,
    compiler: compilerVersion(),
    policies,
    ...(probes ? { probes } : {}),
    table: serializeTable(table.rows, table.trie, (row) => position.get(row.policy.id)!),
  };
}
