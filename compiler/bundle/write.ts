/** Writing a bundle from a compiled set. */
import { canonicalPolicy } from '../policy/normalize.js';
import type { Policy } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import { compilerVersion } from '../version.js';
import { canonicalJson, sha256Hex } from './canonical-json.js';
import { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, type Bundle } from './format.js';
import { serializeTable } from './serialize.js';

/** `sha256:` + hex digest of the canonical JSON of the policies sorted by id. */
export function policySetHash(policies: readonly Policy[]): string {
  return `sha256:${sha256Hex(canonicalJson(sortById(policies)))}`;
}

function sortById(policies: readonly Policy[]): Policy[] {
  return [...policies].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(canonicalPolicy);
}

export function createBundle(table: DecisionTable): Bundle {
  const policies = sortById(table.rows.map((r) => r.policy));
  const position = new Map(policies.map((p, i) => [p.id, i]));
  return {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    hash: `sha256:${sha256Hex(canonicalJson(policies))}`,
    compiler: compilerVersion(),
    policies,
    table: serializeTable(table.rows, table.trie, (row) => position.get(row.policy.id)!),
  };
}
