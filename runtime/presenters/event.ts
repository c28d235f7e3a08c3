/** The public envelope of an event (docs/webhooks-and-events.md#events). */
import type { EventRow } from '../store/events.js';

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
