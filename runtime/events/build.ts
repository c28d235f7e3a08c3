/**
 * Every event body (docs/webhooks-and-events.md#events) is built here, in TypeScript, from the presenters'
 * public forms: decision.*, agent.*, policy.updated and security.alert. The two
 * budget events are the one exception: they are fired inside the limits
 * function (`authz_budget_events`, runtime/store/functions/) in the same
 * statement that moves the money, so that an event is never lost nor doubled;
 * their shape is held to docs/webhooks-and-events.md#events by test/runtime/budgets.test.ts.
 */
import { newId } from '../ids.js';
import { agentResource } from '../presenters/agent.js';
import { decisionResource, reviewResource } from '../presenters/decision.js';
import type { PolicyChange } from '../domain/policy-change.js';
import { policyInEvent } from '../presenters/policy.js';
import type { AgentRow } from '../store/agents.js';
import type { DecisionRow, NewAgent } from '../store/decisions.js';
import type { EventRow } from '../store/events.js';
import type { Environment, Tenant } from '../tenant.js';

export const EVENT_TYPES = [
  'decision.allow',
  'decision.deny',
  'decision.review',
  // Extension (docs/reviews.md#the-rules).
  'decision.reviewed',
  'budget.threshold',
  'budget.exceeded',
  'agent.registered',
  'agent.revoked',
  'policy.updated',
  'security.alert',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event row of any type, its id from the one id function (sorting by time). */
export function eventRow(
  type: EventType,
  accountId: string,
  environment: Environment,
  atMs: number,
  data: Record<string, unknown>,
): EventRow {
  return { id: newId('evt', atMs), account_id: accountId, environment, type, created_at: new Date(atMs), data };
}

/**
 * `decision.allow|deny|review`: `data.decision` is the decision as answered
 * (its permit token left out: a bearer credential is never stored). Only a
 * review decision's event is a row of its own, with its body (a verdict changes
 * the decision's effect, reason and expiry): the allow and deny events are
 * derived from their decisions (migration 025, store/events.ts), with their
 * body built by `decisionEventData` when read (events/references.ts), and null
 * is returned for them.
 *
 * @example
 * decisionEvent(allowRow); // => null (derived from the decision)
 * decisionEvent(reviewRow)!.type; // => 'decision.review'
 */
export function decisionEvent(row: DecisionRow): EventRow | null {
  if (row.effect !== 'review') return null;
  return eventRow(
    'decision.review',
    row.account_id,
    row.environment,
    row.evaluated_at.getTime(),
    decisionEventData(row),
  );
}

/**
 * The body of a decision.* event from its decision row. For allow and deny, the
 * row may have moved on since (confirmed, rejected, expired): the body shows the
 * decision as decided, as its event did when it was stored by value.
 *
 * @example
 * decisionEventData(confirmedRow).decision.status; // => 'pending' (as decided)
 */
export function decisionEventData(row: DecisionRow): Record<string, unknown> {
  const asDecided: DecisionRow =
    row.effect === 'review'
      ? { ...row, permit_token: null }
      : {
          ...row,
          permit_token: null,
          status: row.effect === 'deny' ? 'denied' : 'pending',
          resolved_at: null,
          confirmed_amount: null,
        };
  const decision = decisionResource(asDecided, row.evaluated_at.getTime(), { withToken: false });
  return { decision };
}

/**
 * `decision.reviewed` (extension): a reviewer's verdict, or an approval that
 * timed out. `data.decision` is the decision after it (no permit token),
 * `data.review` its review.
 */
export function reviewedEvent(row: DecisionRow, atMs: number): EventRow {
  const decision = decisionResource({ ...row, permit_token: null }, atMs, { withToken: false });
  return eventRow('decision.reviewed', row.account_id, row.environment, atMs, {
    decision,
    review: reviewResource(row),
  });
}

/** `agent.registered` / `agent.revoked`: `data.agent_id` and `data.agent`. */
export function agentEvent(
  type: 'agent.registered' | 'agent.revoked',
  row: AgentRow,
  tenant: Tenant,
  atMs: number,
): EventRow {
  return eventRow(type, tenant.accountId, tenant.environment, atMs, {
    agent_id: row.agent_id,
    agent: agentResource(row, tenant.environment),
  });
}

/** `agent.registered` for an agent a decision saw first (stored only by the batch that inserts the agent). */
export function registrationEvent(a: NewAgent): EventRow {
  const row: AgentRow = {
    agent_id: a.agent_id,
    status: 'active',
    first_seen_at: a.first_seen_at,
    revoked_at: null,
    attributes: {},
  };
  return agentEvent(
    'agent.registered',
    row,
    { accountId: a.account_id, environment: a.environment },
    a.first_seen_at.getTime(),
  );
}

/** `policy.updated`: `data.policy` (the policy as in a policy file, with `object`) and `data.change`. */
export function policyEvent(tenant: Tenant, policy: object, change: PolicyChange, atMs: number): EventRow {
  return eventRow('policy.updated', tenant.accountId, tenant.environment, atMs, {
    policy: policyInEvent(policy),
    change,
  });
}
