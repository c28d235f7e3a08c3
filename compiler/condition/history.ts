/**
 * The history functions of the condition language
 * (`history.count|sum|exists|denied(ACTIONS, WINDOW[, SCOPE[, MATCH]])`):
 * checking their arguments (every one a literal: the compiler knows each
 * history a policy reads) and turning a checked call into its probe.
 *
 * - ACTIONS: an action pattern (`payments.refund`, `payments.*`, `*`) or a
 *   non-empty list of them;
 * - WINDOW: `<n>s|m|h|d`, 1 s to 90 d;
 * - SCOPE: `session` (default), `agent`, `user` or `environment`;
 * - MATCH: a list of `resource` and `context.<path>` fields.
 */
import {
  HISTORY_FUNCTIONS,
  HISTORY_SCOPES,
  historyProbe,
  windowSeconds,
  type HistoryProbe,
  type HistoryScope,
} from '../history/probe.js';
import { isValidActionPattern } from '../patterns/action.js';
import {
  FIELD_NAME,
  FORBIDDEN_FIELDS,
  HISTORY_ARITY,
  historyArityMessage,
  conditionNodes,
  issueAt,
  type ConditionAst,
  type ConditionIssue,
  type HistoryNode,
  type SourcePos,
} from './ast.js';

const ARGUMENT_NAMES = ['actions', 'window', 'scope', 'match'] as const;
const FUNCTIONS: ReadonlySet<string> = new Set(HISTORY_FUNCTIONS);
const SCOPES: ReadonlySet<string> = new Set(HISTORY_SCOPES);

function at(node: unknown, fallback: SourcePos): SourcePos {
  const pos = (node as { pos?: Partial<SourcePos> } | null)?.pos;
  if (pos && typeof pos.offset === 'number' && typeof pos.line === 'number' && typeof pos.col === 'number')
    return { offset: pos.offset, line: pos.line, col: pos.col };
  return fallback;
}

/**
 * Why a MATCH field is not `resource` or `context.<path>`, or undefined.
 *
 * @example
 * matchFieldProblem('context.claim.id'); // => undefined
 */
export function matchFieldProblem(field: string): string | undefined {
  if (field === 'resource') return undefined;
  const segments = field.split('.');
  if (segments[0] !== 'context' || segments.length < 2)
    return `match field '${field}' is neither 'resource' nor 'context.<path>'`;
  const bad = segments.slice(1).find((s) => !FIELD_NAME.test(s) || FORBIDDEN_FIELDS.has(s));
  return bad === undefined ? undefined : `match field '${field}': '${bad}' cannot be used as a context field name`;
}

/** The strings of a literal string or a list of literal strings; the first offending node otherwise. */
function strings(
  node: ConditionAst,
  allowSingle: boolean,
): { values: string[] } | { notLiteral: ConditionAst } | { wrongType: ConditionAst } {
  if (node?.kind === 'literal')
    return allowSingle && typeof node.value === 'string' ? { values: [node.value] } : { wrongType: node };
  if (node?.kind === 'list' && Array.isArray(node.items)) {
    const values: string[] = [];
    for (const item of node.items) {
      if (item?.kind !== 'literal') return { notLiteral: item ?? node };
      if (typeof item.value !== 'string') return { wrongType: item };
      values.push(item.value);
    }
    return { values };
  }
  return { notLiteral: node };
}

/**
 * The problems of a history call: unknown function, arity, an argument that is
 * not a literal, a bad action pattern, window, scope or match field; each at
 * its line and column. `[]` when {@link probeOf} can make its probe.
 */
export function historyIssues(node: HistoryNode): ConditionIssue[] {
  const issues: ConditionIssue[] = [];
  const pos = at(node, { offset: 0, line: 1, col: 1 });
  const fn: unknown = node.fn;
  if (typeof fn !== 'string' || !FUNCTIONS.has(fn)) {
    return [
      issueAt(
        'condition.unknown_function',
        `unknown function 'history.${String(fn)}'; expected history.count, history.sum, history.exists or history.denied`,
        pos,
      ),
    ];
  }
  const args = Array.isArray(node.args) ? node.args : [];
  if (args.length < HISTORY_ARITY.min || args.length > HISTORY_ARITY.max)
    return [issueAt('condition.arity', historyArityMessage(fn, args.length), pos)];
  const name = (i: number) => `history.${fn}'s ${ARGUMENT_NAMES[i]}`;
  const notLiteral = (i: number, where: ConditionAst) =>
    issues.push(
      issueAt(
        'condition.not_literal',
        `${name(i)} must be a literal (every history argument is known when the policy compiles)`,
        at(where, pos),
      ),
    );

  const actions = strings(args[0]!, true);
  if ('notLiteral' in actions) notLiteral(0, actions.notLiteral);
  else if ('wrongType' in actions)
    issues.push(
      issueAt(
        'condition.history_actions',
        `${name(0)} must be an action pattern or a list of them, as strings`,
        at(actions.wrongType, pos),
      ),
    );
  else if (actions.values.length === 0)
    issues.push(issueAt('condition.history_actions', `${name(0)} must not be empty`, at(args[0], pos)));
  else {
    const list = args[0]!.kind === 'list' ? args[0]!.items : [args[0]!];
    actions.values.forEach((pattern, i) => {
      if (!isValidActionPattern(pattern)) {
        issues.push(
          issueAt(
            'condition.history_actions',
            `'${pattern}' is not an action pattern: namespace.verb ([a-z][a-z0-9_]* each), with * alone or as either part`,
            at(list[i], pos),
          ),
        );
      }
    });
  }

  const window = args[1]!;
  if (window?.kind !== 'literal') notLiteral(1, window);
  else if (typeof window.value !== 'string' || windowSeconds(window.value) === undefined) {
    issues.push(
      issueAt(
        'condition.history_window',
        `${name(1)} ${JSON.stringify(window.value)} is not a window: write <n>s, <n>m, <n>h or <n>d, from 1s to 90d`,
        at(window, pos),
      ),
    );
  }

  const scope = args[2];
  if (scope !== undefined) {
    if (scope?.kind !== 'literal') notLiteral(2, scope);
    else if (typeof scope.value !== 'string' || !SCOPES.has(scope.value)) {
      issues.push(
        issueAt(
          'condition.history_scope',
          `unknown scope ${JSON.stringify(scope.value)}; expected ${HISTORY_SCOPES.join(', ')}`,
          at(scope, pos),
        ),
      );
    }
  }

  const match = args[3];
  if (match !== undefined) {
    const fields = strings(match, false);
    if ('notLiteral' in fields) notLiteral(3, fields.notLiteral);
    else if ('wrongType' in fields)
      issues.push(
        issueAt(
          'condition.history_match',
          `${name(3)} must be a list of field names as strings ('resource', 'context.<path>')`,
          at(fields.wrongType, pos),
        ),
      );
    else {
      fields.values.forEach((field, i) => {
        const problem = matchFieldProblem(field);
        if (problem)
          issues.push(
            issueAt('condition.history_match', problem, at((match as { items: ConditionAst[] }).items[i], pos)),
          );
      });
    }
  }
  return issues;
}

const probes = new WeakMap<HistoryNode, HistoryProbe>();

/** The probe of a checked history call ({@link historyIssues} found nothing); cached per node. */
export function probeOf(node: HistoryNode): HistoryProbe {
  let probe = probes.get(node);
  if (probe === undefined) {
    const [actions, window, scope, match] = node.args as [
      ConditionAst,
      ConditionAst,
      ConditionAst | undefined,
      ConditionAst | undefined,
    ];
    const texts = (n: ConditionAst | undefined): string[] => {
      const r = n === undefined ? { values: [] } : strings(n, true);
      if (!('values' in r)) throw new Error(`probeOf: history.${node.fn} has an argument that is not a literal`);
      return r.values;
    };
    probe = historyProbe(
      node.fn,
      texts(actions),
      texts(window)[0] ?? '',
      (texts(scope)[0] ?? 'session') as HistoryScope,
      texts(match),
    );
    probes.set(node, probe);
  }
  return probe;
}

/** Every history call of a condition, outermost first, left to right. */
function historyNodes(ast: ConditionAst, out: HistoryNode[]): HistoryNode[] {
  return conditionNodes(ast, (n): n is HistoryNode => n.kind === 'history', out);
}

/**
 * The history probes a checked condition reads (under `!`, `&&`, `||`,
 * arithmetic and comparisons alike), unique by key, in order of appearance.
 *
 * @example
 * ```ts
 * import { conditionProbes, parseCondition } from 'agent-authz/compiler';
 *
 * const { ast } = parseCondition("amount < 5 || history.count('payments.*', '1h') < 3 && !history.exists('payments.*', '60m')");
 * console.log(conditionProbes(ast).map((p) => p.key).join(' ')); // => count|payments.*|3600|session|
 * ```
 */
export function conditionProbes(ast: ConditionAst): HistoryProbe[] {
  const seen = new Map<string, HistoryProbe>();
  for (const node of historyNodes(ast, [])) {
    const probe = probeOf(node);
    if (!seen.has(probe.key)) seen.set(probe.key, probe);
  }
  return [...seen.values()];
}

/** The history calls of a condition, with their probes (for lints). */
export function historyCalls(ast: ConditionAst): Array<{ node: HistoryNode; probe: HistoryProbe }> {
  return historyNodes(ast, []).map((node) => ({ node, probe: probeOf(node) }));
}
