/** Building event rows (spec 2.5) and their public envelope. */
import type { Environment } from '../tenant.js';
import { newId } from '../ids.js';
import type { EventRow } from '../store/events.js';

export const EVENT_TYPES = [
  'decision.allow',
  'decision.deny',
  'decision.review',
  'budget.threshold',
  'budget.exceeded',
  'agent.registered',
  'agent.revoked',
  'policy.updated',
  'security.alert',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function eventRow(type: EventType, accountId: string, environment: Environment, atMs: number, data: Record<string, unknown>): EventRow {
  return { id: newId('evt'), account_id: accountId, environment, type, created_at: new Date(atMs), data };
}

export interface EventEnvelope {
  id: string;
  object: 'event';
  type: string;
  created_at: string;
  account_id: string;
  livemode: boolean;
  data: Record<string, unknown>;
}

export function envelope(row: EventRow): EventEnvelope {
  return {
    id: row.id,
    object: 'event',
    type: row.type,
    created_at: row.created_at.toISOString(),
    account_id: row.account_id,
    livemode: row.environment === 'live',
    data: row.data,
  };
}
