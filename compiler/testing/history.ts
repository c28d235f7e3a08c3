/**
 * The history and labels a policy test case (or `authz explain --history`)
 * gives: earlier decisions written relative to the request (`ago: '10m'`,
 * every field but `action` and `ago` defaulting to the request's), turned into
 * the request's history provider with the reference computation
 * (history/reference.ts).
 */
import { historyValuesOf, type EarlierDecision } from '../history/reference.js';
import { durationSeconds } from '../history/probe.js';
import type { EvaluationInput } from '../policy/types.js';

/** An earlier decision as a test file writes it (schemas/policy-test.schema.json#/$defs/earlierDecision). */
export interface TestHistoryEntry {
  action: string;
  /** How long before the request: `<n>s|m|h|d`. */
  ago: string;
  agent_id?: string;
  session_id?: string | null;
  on_behalf_of?: string | null;
  resource?: string | null;
  amount?: number | null;
  context?: Record<string, unknown> | null;
  /** Default allow. */
  effect?: 'allow' | 'deny';
}

/** The instant test cases are decided at (only differences from it matter). */
export const TEST_NOW_MS = Date.parse('2026-01-01T12:00:00.000Z');

/**
 * The entries as earlier decisions of `request`, decided at `nowMs`: each field
 * a given entry lacks is the request's, the effect allow.
 *
 * @example
 * ```ts
 * import { earlierDecisionsOf } from 'agent-authz/compiler';
 *
 * const request = { agent_id: 'bot', action: 'payments.refund', session_id: 's1', amount: 20 };
 * const [d] = earlierDecisionsOf([{ action: 'payments.refund', ago: '10m', amount: 5 }], request, 3_600_000);
 * console.log(d.agent_id, d.session_id, d.amount, d.effect, d.at_ms); // => bot s1 5 allow 3000000
 * ```
 */
export function earlierDecisionsOf(
  entries: readonly TestHistoryEntry[],
  request: EvaluationInput,
  nowMs: number,
): EarlierDecision[] {
  return entries.map((e) => {
    const seconds = durationSeconds(e.ago);
    if (seconds === undefined)
      throw new Error(`ago ${JSON.stringify(e.ago)} is not a duration (<n>s, <n>m, <n>h or <n>d)`);
    const own = <K extends keyof TestHistoryEntry & keyof EvaluationInput>(key: K) =>
      e[key] !== undefined ? e[key] : request[key];
    return {
      action: e.action,
      agent_id: e.agent_id ?? request.agent_id,
      session_id: own('session_id') ?? null,
      on_behalf_of: own('on_behalf_of') ?? null,
      resource: own('resource') ?? null,
      amount: own('amount') ?? null,
      context: own('context') ?? null,
      effect: e.effect ?? 'allow',
      at_ms: nowMs - seconds * 1000,
    };
  });
}

/**
 * The request as a test case decides it: with its session's labels and a
 * history provider over the given earlier decisions (none: every count is 0).
 *
 * @example
 * ```ts
 * import { compileSources, evaluate, requestWithHistory } from 'agent-authz/compiler';
 *
 * const text = "name: two-refunds\neffect: allow\nactions: [billing.refund]\ncondition: history.count('billing.refund', '1h') < 2\n";
 * const { table } = compileSources([{ file: 'p.yaml', text }]);
 * const request = { agent_id: 'bot', action: 'billing.refund', session_id: 's1' };
 * console.log(evaluate(table, requestWithHistory(request, [{ action: 'billing.refund', ago: '10m' }], ['private'])).effect); // => allow
 * console.log(evaluate(table, requestWithHistory(request, [{ action: 'billing.refund', ago: '10m' }, { action: 'billing.refund', ago: '5m' }], [])).effect); // => deny
 * ```
 */
export function requestWithHistory(
  request: EvaluationInput,
  entries: readonly TestHistoryEntry[] | undefined,
  labels: readonly string[] | undefined,
  nowMs = TEST_NOW_MS,
): EvaluationInput {
  const out: EvaluationInput = {
    ...request,
    history: historyValuesOf(request, earlierDecisionsOf(entries ?? [], request, nowMs), nowMs),
  };
  if (labels !== undefined) out.session_labels = labels;
  return out;
}
