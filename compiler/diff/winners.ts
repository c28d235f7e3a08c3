/**
 * The action half of a semantic diff: for the actions the two sets talk about,
 * which policy wins in each set, and where that changes.
 *
 * The winner of a concrete action A in a set: the highest-ranked enabled policy
 * (lowest priority number; at equal priority deny, review, allow; then id) whose
 * action patterns match A, its agents, resources and condition read as matching
 * (a request from any agent, on any resource, with a context its condition
 * accepts). It decides every request on A that its own filters admit; policies
 * ranked below it decide only what it does not admit. No enabled policy matches A:
 * no winner (null; such requests are denied policy.not_found or policy.disabled).
 * Disabled and shadow policies never win.
 *
 * The actions probed, from every action pattern either set mentions:
 * - `ns.verb`: that action;
 * - `ns.*`: `ns.v` for each verb v named anywhere in either set (by `x.v` or
 *   `*.v`), at most `sample` of them in alphabetical order, plus `ns.<other>`,
 *   a verb no policy names;
 * - `*.verb`: `n.verb` for each namespace n named anywhere (at most `sample`),
 *   plus `<other>.verb`;
 * - `*`: `<other>.<other>`.
 * `<other>` is probed with a name no policy uses (`other`, else `other1`, ...).
 */
import { actionPatternMatches, actionPatternParts } from '../patterns/action.js';
import type { Effect } from '../policy/types.js';
import type { DecisionTable } from '../table/build.js';

export interface ActionProbe {
  /** What is shown: the action, with `<other>` for a part no policy names. */
  label: string;
  /** The concrete action evaluated. */
  action: string;
  /** The mentioned patterns (of either set) that match it. */
  patterns: string[];
}

export interface Winner {
  policy_id: string;
  effect: Effect;
  priority: number;
}

export interface WinnerChange {
  action: string;
  patterns: string[];
  old: Winner | null;
  new: Winner | null;
}

export const DEFAULT_SAMPLE = 25;
export const OTHER = '<other>';

function unusedName(used: ReadonlySet<string>): string {
  if (!used.has('other')) return 'other';
  for (let i = 1; ; i++) if (!used.has(`other${i}`)) return `other${i}`;
}

/**
 * The actions to probe for these patterns (see the module's comment), each once,
 * sorted by label.
 *
 * @param patterns - every action pattern the compared sets mention.
 * @param sample - most concrete actions drawn from one wildcard pattern (besides `<other>`).
 */
export function probeActions(patterns: Iterable<string>, sample = DEFAULT_SAMPLE): ActionProbe[] {
  const mentioned = [...new Set(patterns)].sort();
  const namespaces = new Set<string>();
  const verbs = new Set<string>();
  for (const p of mentioned) {
    const [ns, verb] = actionPatternParts(p);
    if (ns !== '*') namespaces.add(ns);
    if (verb !== '*') verbs.add(verb);
  }
  const otherNs = unusedName(namespaces);
  const otherVerb = unusedName(verbs);
  const sortedNs = [...namespaces].sort().slice(0, sample);
  const sortedVerbs = [...verbs].sort().slice(0, sample);
  const probes = new Map<string, string>(); // label -> action
  const add = (ns: string, verb: string) => {
    const label = `${ns === otherNs ? OTHER : ns}.${verb === otherVerb ? OTHER : verb}`;
    probes.set(label, `${ns}.${verb}`);
  };
  for (const p of mentioned) {
    const [ns, verb] = actionPatternParts(p);
    if (ns !== '*' && verb !== '*') add(ns, verb);
    else if (ns !== '*') {
      for (const v of sortedVerbs) add(ns, v);
      add(ns, otherVerb);
    } else if (verb !== '*') {
      for (const n of sortedNs) add(n, verb);
      add(otherNs, verb);
    } else add(otherNs, otherVerb);
  }
  return [...probes]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([label, action]) => ({ label, action, patterns: mentioned.filter((p) => actionPatternMatches(p, action)) }));
}

/**
 * The winner of a concrete action in a table (see the module's comment).
 *
 * @param table - a compiled table.
 * @param action - a concrete action, `ns.verb`.
 * @returns the winner, or null when no enabled policy matches the action.
 */
export function winnerOf(table: DecisionTable, action: string): Winner | null {
  for (const row of table.rows) {
    if (!row.enabled) continue;
    for (const pattern of row.policy.actions) {
      if (actionPatternMatches(pattern, action))
        return { policy_id: row.policy.id, effect: row.policy.effect, priority: row.policy.priority };
    }
  }
  return null;
}

/** Every action pattern of a table's policies. */
export function actionPatternsOf(table: DecisionTable): string[] {
  return table.rows.flatMap((r) => r.policy.actions);
}

/**
 * The probed actions whose winner differs between two sets (another policy, or
 * the same policy with another effect or priority).
 *
 * @param before - the old set's table.
 * @param after - the new set's table.
 * @param sample - as for {@link probeActions}.
 * @returns how many actions were probed, and the changes in label order.
 */
export function diffWinners(
  before: DecisionTable,
  after: DecisionTable,
  sample = DEFAULT_SAMPLE,
): { probed: number; changes: WinnerChange[] } {
  const probes = probeActions([...actionPatternsOf(before), ...actionPatternsOf(after)], sample);
  const changes: WinnerChange[] = [];
  const same = (a: Winner | null, b: Winner | null) =>
    a === b ||
    (a !== null && b !== null && a.policy_id === b.policy_id && a.effect === b.effect && a.priority === b.priority);
  for (const probe of probes) {
    const old = winnerOf(before, probe.action);
    const now = winnerOf(after, probe.action);
    if (!same(old, now)) changes.push({ action: probe.label, patterns: probe.patterns, old, new: now });
  }
  return { probed: probes.length, changes };
}
