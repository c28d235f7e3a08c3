/**
 * Decision events that name their decision instead of holding a body get their
 * bodies here, when they are read: by GET /v1/events and by the webhook
 * dispatcher. They are the allow and deny events derived from their decisions
 * (migration 025; an events row only when subscribed, which the deliveries
 * name) and those stored by reference before it (migration 017). One query for
 * all the decisions a page or a claim names.
 */
import type { SqlOrTx } from '../store/connect.js';
import { findDecisionsByKeys, type DecisionRow } from '../store/decisions.js';
import type { Environment } from '../tenant.js';
import { decisionEventData } from './build.js';

/** What a stored event row needs to have its body filled in. */
export interface EventBodyRef {
  account_id: string;
  environment: Environment;
  data: Record<string, unknown> | null;
  decision_id?: string | null;
}

/** Thrown when a referenced decision is gone (it never should be: retention keeps a day's decisions while its events have deliveries to make). */
export class MissingDecisionError extends Error {}

const keyOf = (accountId: string, environment: string, id: string) => `${accountId}\u0000${environment}\u0000${id}`;

/**
 * The body of every event of `rows`: its own `data`, or for a decision event
 * that names its decision, built from it (events/build.ts decisionEventData).
 *
 * @example
 * const bodies = await eventBodies(sql, page.data); // bodies[i] is page.data[i]'s data
 */
export async function eventBodies(
  sql: SqlOrTx,
  rows: readonly EventBodyRef[],
): Promise<Array<Record<string, unknown>>> {
  const refs = rows.filter((r) => r.data === null && r.decision_id);
  const decisions = new Map<string, DecisionRow>();
  if (refs.length > 0) {
    const found = await findDecisionsByKeys(
      sql,
      refs.map((r) => ({ account_id: r.account_id, environment: r.environment, id: r.decision_id! })),
    );
    for (const d of found) decisions.set(keyOf(d.account_id, d.environment, d.id), d);
  }
  return rows.map((r) => {
    if (r.data !== null) return r.data;
    const decision = decisions.get(keyOf(r.account_id, r.environment, r.decision_id ?? ''));
    if (!decision) throw new MissingDecisionError(`the decision ${r.decision_id} of an event is not in the store`);
    return decisionEventData(decision);
  });
}
