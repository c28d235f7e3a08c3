/**
 * Lints (warnings; errors under --strict): policies that can never decide because
 * a higher-priority policy of another effect covers them; same-priority policies
 * that conflict; policies that can never match; shadow policies that decide
 * exactly like an enabled one (./shadow.ts); an approval on a policy whose
 * effect is not review (it has no effect there); a budget on a deny policy
 * (never applies); two policies that can match one request with budgets held in
 * different units (such requests must give `amounts` per unit); labels on a
 * deny policy (never added); the history lints of ./history.ts.
 */
import { isConstantFalse } from '../condition/index.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { actionPatternCovers, actionPatternsOverlap } from '../patterns/action.js';
import { globCovers, globsIntersect } from '../patterns/glob.js';
import type { PolicyOrigin } from '../policy/read.js';
import { budgetScope, isHeldUnit, type Policy } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';
import type { PolicyRow } from '../table/rows.js';
import { lintHistory, type HistoryLintOptions } from './history.js';
import { forEachOverlappingPair } from './pairs.js';
import { lintShadowDuplicates } from './shadow.js';

type Origins = ReadonlyMap<string, PolicyOrigin>;

export function lintTable(table: DecisionTable, origins: Origins, options: HistoryLintOptions = {}): Diagnostic[] {
  const out: Diagnostic[] = [];
  const warn = (row: PolicyRow, code: string, message: string) => {
    const o = origins.get(row.policy.id);
    out.push({
      severity: 'warning',
      code,
      message,
      path: o?.pointer || '/',
      ...(o?.file ? { file: o.file, line: o.line, col: o.col } : {}),
    });
  };
  const where = (p: Policy) => {
    const o = origins.get(p.id);
    return o?.file ? ` (${o.file}:${o.line})` : '';
  };
  for (const row of table.rows) {
    if (row.conditionAst && isConstantFalse(row.conditionAst)) {
      warn(row, 'lint.never_matches', `policy ${row.policy.id} can never match: its condition is always false`);
    }
    if (row.policy.approval && row.policy.effect !== 'review') {
      warn(
        row,
        'lint.approval_ignored',
        `policy ${row.policy.id} has approval but its effect is ${row.policy.effect}: only review policies wait for approval, so it is ignored (make the effect review, or remove approval)`,
      );
    }
    if (row.policy.budget && row.policy.effect === 'deny') {
      warn(
        row,
        'lint.budget_ignored',
        `policy ${row.policy.id} has a budget but its effect is deny: budgets apply only to allowed and reviewed decisions, so it never counts anything`,
      );
    }
    if (row.policy.labels && row.policy.effect === 'deny') {
      warn(
        row,
        'lint.labels_ignored',
        `policy ${row.policy.id} has labels but its effect is deny: labels join the session only when a decision the policy wins is allowed, so they are never added`,
      );
    }
    lintHistory(row, options, (code, message) => warn(row, code, message));
  }
  lintShadowDuplicates(table, (row, message) => warn(row, 'lint.shadow_duplicate', message));
  forEachOverlappingPair(table, (a, b) => {
    const p = a.policy;
    const q = b.policy;
    if (!a.enabled || !b.enabled) return;
    if (
      p.effect !== 'deny' &&
      q.effect !== 'deny' &&
      p.budget &&
      q.budget &&
      isHeldUnit(p.budget.unit) &&
      isHeldUnit(q.budget.unit) &&
      p.budget.unit !== q.budget.unit &&
      overlaps(p, q)
    ) {
      warn(
        b,
        'lint.budget_units',
        `policies ${p.id}${where(p)} (${p.budget.unit}, ${budgetScope(p.budget)} budget) and ${q.id} (${q.budget.unit}, ${budgetScope(q.budget)} budget) can apply to one request: such a request must give amounts per unit (amounts: { "${p.budget.unit}": ..., "${q.budget.unit}": ... }); amount alone is refused`,
      );
    }
    if (p.effect === q.effect) return;
    if (p.priority === q.priority) {
      if (p.condition === undefined && q.condition === undefined && overlaps(p, q)) {
        warn(
          b,
          'lint.conflict',
          `policies ${p.id}${where(p)} and ${q.id} have the same priority ${p.priority} and different effects (${p.effect}, ${q.effect}) for some requests; ${p.id} wins by the deny > review > allow rule`,
        );
      }
      return;
    }
    if (p.condition === undefined && covers(p, q)) {
      warn(
        b,
        'lint.shadowed',
        `policy ${q.id} (${q.effect}, priority ${q.priority}) can never decide: ${p.id}${where(p)} (${p.effect}, priority ${p.priority}) matches every request it matches`,
      );
    }
  });
  return out;
}

function overlapsList(
  a: string[] | undefined,
  b: string[] | undefined,
  test: (x: string, y: string) => boolean,
): boolean {
  if (a === undefined || b === undefined) return true;
  return a.some((x) => b.some((y) => test(x, y)));
}

/** Whether some request matches both (conditions aside). */
function overlaps(p: Policy, q: Policy): boolean {
  return (
    overlapsList(p.agents, q.agents, globsIntersect) &&
    overlapsList(p.actions, q.actions, actionPatternsOverlap) &&
    overlapsList(p.resources, q.resources, globsIntersect)
  );
}

function coversList(
  outer: string[] | undefined,
  inner: string[] | undefined,
  test: (o: string, i: string) => boolean,
): boolean {
  if (outer === undefined) return true;
  if (inner === undefined) return false;
  return inner.every((i) => outer.some((o) => test(o, i)));
}

/** Whether every request `inner` matches is matched by `outer` (conservative). */
function covers(outer: Policy, inner: Policy): boolean {
  // Cheap rejections first: a filter on the outer side that the inner side lacks.
  if ((outer.resources && !inner.resources) || (outer.agents && !inner.agents)) return false;
  return (
    coversList(outer.agents, inner.agents, globCovers) &&
    coversList(outer.actions, inner.actions, actionPatternCovers) &&
    coversList(outer.resources, inner.resources, globCovers)
  );
}
