/**
 * The reference meaning of a history probe: its value computed from a plain
 * list of earlier decisions. What `authz test` and `authz explain` use (the
 * earlier decisions a test case gives), and what the runtime's store is
 * tested against (docs/policies.md#history-in-conditions).
 *
 * - An earlier decision counts when its time is within the window before now
 *   (`nowMs - window <= at_ms <= nowMs`), its action matches one of the
 *   probe's patterns, it is in the probe's scope (same `session_id`,
 *   `agent_id` or `on_behalf_of` as the request; `environment`: every one),
 *   and every MATCH field is equal to the request's (`resource`,
 *   `context.<path>`; a field the request lacks matches nothing).
 * - `count` counts the allowed ones, `denied` the denied ones, `sum` adds the
 *   allowed ones' amounts (`confirmed_amount` when set, else `amount`, else 0).
 * - A session or user probe for a request without `session_id` /
 *   `on_behalf_of` is unknown: null.
 */
import { jsonEqual, readField } from '../condition/compile.js';
import { actionPatternMatches } from '../patterns/action.js';
import type { EvaluationInput } from '../policy/types.js';
import type { HistoryProbe, HistoryValues } from './probe.js';

/** An earlier decision, as history reads it. */
export interface EarlierDecision {
  action: string;
  agent_id: string;
  session_id?: string | null;
  on_behalf_of?: string | null;
  resource?: string | null;
  amount?: number | null;
  /** Set once the decision was confirmed with an amount; `sum` prefers it. */
  confirmed_amount?: number | null;
  context?: Record<string, unknown> | null;
  /** `allow` for what counts (allowed, and reviews that count as allowed), `deny` for what `denied` counts. */
  effect: 'allow' | 'deny';
  /** When it was decided (its `evaluated_at`), in ms since the epoch. */
  at_ms: number;
}

/** The value of a MATCH field on a request or an earlier decision (undefined: missing). */
function fieldOf(decision: Pick<EvaluationInput, 'resource' | 'context'>, field: string): unknown {
  if (field === 'resource') return decision.resource ?? undefined;
  return readField(decision.context ?? undefined, field.split('.').slice(1));
}

function inScope(probe: HistoryProbe, request: EvaluationInput, d: EarlierDecision): boolean {
  switch (probe.scope) {
    case 'session':
      return d.session_id === request.session_id;
    case 'user':
      return d.on_behalf_of === request.on_behalf_of;
    case 'agent':
      return d.agent_id === request.agent_id;
    case 'environment':
      return true;
  }
}

/**
 * The value of one probe for a request decided at `nowMs`, given the earlier
 * decisions (in any order); null when the probe's scope needs a field the
 * request lacks.
 *
 * @example
 * ```ts
 * import { historyProbe, historyValueOf } from 'agent-authz/compiler';
 *
 * const now = Date.parse('2026-11-28T12:00:00Z');
 * const request = { agent_id: 'bot', action: 'payments.refund', session_id: 's1' };
 * const earlier = [
 *   { action: 'payments.refund', agent_id: 'bot', session_id: 's1', amount: 20, effect: 'allow', at_ms: now - 600_000 },
 *   { action: 'payments.refund', agent_id: 'bot', session_id: 's1', amount: 30, effect: 'allow', at_ms: now - 7_200_000 },
 *   { action: 'payments.refund', agent_id: 'bot', session_id: 's2', amount: 40, effect: 'deny', at_ms: now - 60_000 },
 * ];
 * console.log(historyValueOf(historyProbe('count', ['payments.*'], '1h', 'session', []), request, earlier, now)); // => 1
 * console.log(historyValueOf(historyProbe('sum', ['payments.refund'], '1d', 'agent', []), request, earlier, now)); // => 50
 * console.log(historyValueOf(historyProbe('denied', ['*'], '1h', 'environment', []), request, earlier, now)); // => 1
 * console.log(historyValueOf(historyProbe('count', ['*'], '1h', 'user', []), request, earlier, now)); // => null
 * ```
 */
export function historyValueOf(
  probe: HistoryProbe,
  request: EvaluationInput,
  earlier: readonly EarlierDecision[],
  nowMs: number,
): number | null {
  if (probe.scope === 'session' && (request.session_id === undefined || request.session_id === null)) return null;
  if (probe.scope === 'user' && (request.on_behalf_of === undefined || request.on_behalf_of === null)) return null;
  const wanted = probe.match.map((field) => ({ field, value: fieldOf(request, field) }));
  // A MATCH field the request lacks matches nothing.
  if (wanted.some((w) => w.value === undefined)) return 0;
  const since = nowMs - probe.windowSeconds * 1000;
  const effect = probe.measure === 'denied' ? 'deny' : 'allow';
  let value = 0;
  for (const d of earlier) {
    if (d.effect !== effect || d.at_ms < since || d.at_ms > nowMs) continue;
    if (!probe.actions.some((pattern) => actionPatternMatches(pattern, d.action))) continue;
    if (!inScope(probe, request, d)) continue;
    if (!wanted.every((w) => jsonEqual(fieldOf(d, w.field), w.value))) continue;
    value += probe.measure === 'sum' ? (d.confirmed_amount ?? d.amount ?? 0) : 1;
  }
  return value;
}

/**
 * A history provider for a request over a list of earlier decisions (what
 * `EvaluationInput.history` takes), every probe computed with
 * {@link historyValueOf} and remembered by key.
 *
 * @example
 * ```ts
 * import { compileSources, evaluate, historyValuesOf } from 'agent-authz/compiler';
 *
 * const text = "name: few-refunds\neffect: allow\nactions: [payments.refund]\ncondition: history.count('payments.refund', '1h', 'agent') < 1\n";
 * const { table } = compileSources([{ file: 'p.yaml', text }]);
 * const now = Date.now();
 * const request = { agent_id: 'bot', action: 'payments.refund' };
 * console.log(evaluate(table, { ...request, history: historyValuesOf(request, [], now) }).effect); // => allow
 * const earlier = [{ action: 'payments.refund', agent_id: 'bot', effect: 'allow', at_ms: now - 1000 }];
 * console.log(evaluate(table, { ...request, history: historyValuesOf(request, earlier, now) }).effect); // => deny
 * ```
 */
export function historyValuesOf(
  request: EvaluationInput,
  earlier: readonly EarlierDecision[],
  nowMs: number,
): HistoryValues {
  const known = new Map<string, number | null>();
  return (probe) => {
    let value = known.get(probe.key);
    if (value === undefined) {
      value = historyValueOf(probe, request, earlier, nowMs);
      known.set(probe.key, value);
    }
    return value;
  };
}
