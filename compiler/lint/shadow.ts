/**
 * The shadow lint: a shadow policy that decides exactly like an enabled one can
 * never make a decision's shadow outcome differ, so trying it in shadow shows
 * nothing. "Decides exactly like" compares what a decision reads: priority,
 * effect, agents, actions and resources (as sets: order and repeats aside) and
 * the condition (its canonical print, so spacing and redundant parentheses
 * aside). Id, name, state and description never matter. A pair that differs only
 * in rate_limit or budget gets its own message: shadow evaluation applies no
 * limit and no budget, so such a change cannot be tried in shadow either.
 */
import { canonicalJson } from '../bundle/canonical-json.js';
import { printCondition } from '../condition/index.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';

/** The fields a decision reads, in a canonical form. */
function decisionKey(row: PolicyRow): string {
  const p = row.policy;
  const set = (values: readonly string[] | undefined) => (values === undefined ? null : [...new Set(values)].sort());
  return canonicalJson({
    priority: p.priority,
    effect: p.effect,
    agents: set(p.agents),
    actions: set(p.actions),
    resources: set(p.resources),
    condition: row.conditionAst ? printCondition(row.conditionAst) : (p.condition ?? null),
  });
}

const limitsKey = (row: PolicyRow) =>
  canonicalJson({ rate_limit: row.policy.rate_limit ?? null, budget: row.policy.budget ?? null });

/** Calls `report(row, message)` for each shadow policy that decides exactly like an enabled one. */
export function lintShadowDuplicates(table: DecisionTable, report: (row: PolicyRow, message: string) => void): void {
  if (table.shadow === null) return;
  const enabled = new Map<string, PolicyRow[]>();
  for (const row of table.rows) {
    if (!row.enabled) continue;
    const key = decisionKey(row);
    const list = enabled.get(key);
    if (list) list.push(row);
    else enabled.set(key, [row]);
  }
  for (const row of table.rows) {
    if (row.policy.state !== 'shadow') continue;
    const twins = enabled.get(decisionKey(row));
    if (!twins) continue;
    const same = twins.find((t) => limitsKey(t) === limitsKey(row));
    const id = row.policy.id;
    if (same) {
      report(
        row,
        `shadow policy ${id} is identical to enabled policy ${same.policy.id} (apart from id, name and description): its shadow outcome can never differ from the decision; change it, or remove it`,
      );
    } else {
      const twin = twins[0]!.policy.id;
      report(
        row,
        `shadow policy ${id} differs from enabled policy ${twin} only in rate_limit or budget, which shadow evaluation does not apply: its shadow outcome can never differ from the decision`,
      );
    }
  }
}
