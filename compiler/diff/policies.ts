/**
 * The policy half of a semantic diff between two policy sets: policies added,
 * removed (by id) and changed, field by field. "Semantic": lists whose order
 * alone changed (agents, actions, resources, read as sets) and conditions that
 * only changed in spacing or redundant parentheses (compared by their canonical
 * print) are not changes; every other field is compared by its canonical JSON.
 */
import { canonicalJson } from '../bundle/canonical-json.js';
import { printCondition } from '../condition/index.js';
import type { Policy } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';

/** The fields compared, in the canonical order (the id is what pairs policies up). */
export const DIFF_FIELDS = [
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
] as const;
export type DiffField = (typeof DIFF_FIELDS)[number];

export interface FieldChange {
  field: DiffField;
  /** The old value; null when the field was absent. */
  old: unknown;
  /** The new value; null when the field is absent. */
  new: unknown;
}

export interface PolicyChange {
  id: string;
  fields: FieldChange[];
}

export interface PolicySetDiff {
  /** In the new set only, sorted by id. */
  added: Policy[];
  /** In the old set only, sorted by id. */
  removed: Policy[];
  /** In both, with at least one field changed, sorted by id. */
  changed: PolicyChange[];
}

const SET_FIELDS: ReadonlySet<DiffField> = new Set(['agents', 'actions', 'resources']);

function comparable(row: PolicyRow, field: DiffField): string {
  const value = row.policy[field];
  if (value === undefined) return 'null';
  if (SET_FIELDS.has(field)) return canonicalJson([...new Set(value as string[])].sort());
  if (field === 'condition' && row.conditionAst) return JSON.stringify(printCondition(row.conditionAst));
  return canonicalJson(value);
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The policies added, removed and changed from `before` to `after` (paired by id).
 *
 * @param before - the old set's table.
 * @param after - the new set's table.
 * @returns the three lists, each sorted by id.
 *
 * @example
 * ```ts
 * import { compileItems, diffPolicySets, readPolicyValue } from 'agent-authz/compiler';
 *
 * const table = (...values) => compileItems(values.flatMap((v) => readPolicyValue(v).items)).table;
 * const before = table({ id: 'pol_a', effect: 'allow', actions: ['orders.read'] }, { id: 'pol_b', effect: 'deny', actions: ['*.delete'] });
 * const after = table({ id: 'pol_a', effect: 'allow', actions: ['orders.read'], priority: 5 }, { id: 'pol_c', effect: 'allow', actions: ['orders.list'] });
 * const diff = diffPolicySets(before, after);
 * console.log(diff.added.map((p) => p.id), diff.removed.map((p) => p.id)); // => [ 'pol_c' ] [ 'pol_b' ]
 * console.log(diff.changed[0].id, diff.changed[0].fields); // => pol_a [ { field: 'priority', old: 100, new: 5 } ]
 * ```
 */
export function diffPolicySets(before: DecisionTable, after: DecisionTable): PolicySetDiff {
  const added: Policy[] = [];
  const removed: Policy[] = [];
  const changed: PolicyChange[] = [];
  for (const row of after.rows) if (!before.byId.has(row.policy.id)) added.push(row.policy);
  for (const row of before.rows) {
    const next = after.byId.get(row.policy.id);
    if (!next) {
      removed.push(row.policy);
      continue;
    }
    const fields: FieldChange[] = [];
    for (const field of DIFF_FIELDS) {
      if (comparable(row, field) !== comparable(next, field))
        fields.push({ field, old: row.policy[field] ?? null, new: next.policy[field] ?? null });
    }
    if (fields.length > 0) changed.push({ id: row.policy.id, fields });
  }
  return { added: added.sort(byId), removed: removed.sort(byId), changed: changed.sort(byId) };
}
