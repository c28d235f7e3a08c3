/**
 * Lints of the history a policy reads (docs/policies.md#history-in-conditions):
 *
 * - `lint.history_beyond_retention`: a window longer than the decision log's
 *   retention (when the retention is known: the service, `authz push
 *   --retention-days`), since what retention dropped no longer counts;
 * - `lint.history_unsatisfiable`: a comparison of a history value that no
 *   history can make true (`history.count(...) < 0`: values are never
 *   negative, counts are whole numbers);
 * - `lint.history_environment_wildcard`: an `environment` probe on `*`, which
 *   every decision of the environment would wait on.
 */
import { historyCalls, printCondition, type ConditionAst } from '../condition/index.js';
import { probeText } from '../history/probe.js';
import type { PolicyRow } from '../table/rows.js';

export interface HistoryLintOptions {
  /** Days of decisions the log keeps (null: forever; absent: unknown, no retention lint). */
  retentionDays?: number | null;
}

const MIRROR: Record<string, string> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '==': '==', '!=': '!=' };

/** Whether `value OP k` can hold for some history value (never negative; a whole number for counts). */
function satisfiable(op: string, k: number, whole: boolean): boolean {
  switch (op) {
    case '<':
      return k > 0;
    case '<=':
      return k >= 0;
    case '==':
      return k >= 0 && (!whole || Number.isInteger(k));
    default:
      return true;
  }
}

/** The comparisons of a history value with a number that can never be true. */
function unsatisfiable(ast: ConditionAst, out: ConditionAst[]): ConditionAst[] {
  switch (ast.kind) {
    case 'not':
      unsatisfiable(ast.operand, out);
      break;
    case 'and':
    case 'or':
      for (const o of ast.operands) unsatisfiable(o, out);
      break;
    case 'call':
      for (const a of ast.args) unsatisfiable(a, out);
      break;
    case 'arith':
      unsatisfiable(ast.left, out);
      unsatisfiable(ast.right, out);
      break;
    case 'compare': {
      const leftHistory = ast.left.kind === 'history' && ast.right.kind === 'literal';
      const rightHistory = ast.right.kind === 'history' && ast.left.kind === 'literal';
      if (leftHistory || rightHistory) {
        const history = (leftHistory ? ast.left : ast.right) as Extract<ConditionAst, { kind: 'history' }>;
        const k = (leftHistory ? ast.right : ast.left) as Extract<ConditionAst, { kind: 'literal' }>;
        const op = leftHistory ? ast.op : MIRROR[ast.op];
        if (
          history.fn !== 'exists' &&
          typeof k.value === 'number' &&
          op !== undefined &&
          !satisfiable(op, k.value, history.fn !== 'sum')
        )
          out.push(ast);
      } else {
        unsatisfiable(ast.left, out);
        unsatisfiable(ast.right, out);
      }
      break;
    }
  }
  return out;
}

/** The history lints of one row, as (code, message) pairs. */
export function lintHistory(
  row: PolicyRow,
  options: HistoryLintOptions,
  warn: (code: string, message: string) => void,
): void {
  if (row.conditionAst === null || row.probes.length === 0) return;
  const id = row.policy.id;
  for (const compare of unsatisfiable(row.conditionAst, [])) {
    warn(
      'lint.history_unsatisfiable',
      `policy ${id}: ${printCondition(compare)} is never true: history values are never negative, and counts are whole numbers`,
    );
  }
  const retention = options.retentionDays;
  const reported = new Set<string>();
  for (const { probe } of historyCalls(row.conditionAst)) {
    if (reported.has(probe.key)) continue;
    reported.add(probe.key);
    if (typeof retention === 'number' && probe.windowSeconds > retention * 86_400) {
      warn(
        'lint.history_beyond_retention',
        `policy ${id}: ${probeText(probe)} reads ${probe.window} of history, but the decision log keeps ${retention} day${retention === 1 ? '' : 's'} (AUTHZ_RETENTION_DAYS): older decisions no longer count`,
      );
    }
    if (probe.scope === 'environment' && probe.actions.includes('*')) {
      warn(
        'lint.history_environment_wildcard',
        `policy ${id}: ${probeText(probe)} counts every decision of the environment: each decision it applies to waits on one shared history (name the actions, or use the session, agent or user scope)`,
      );
    }
  }
}
