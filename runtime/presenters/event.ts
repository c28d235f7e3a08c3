/** The public envelope of an event (docs/webhooks-and-events.md#events). */
import type { Event } from '../../clients/typescript/wire.js';
import type { EventRow } from '../store/events.js';

/** The envelope's wire type (schemas/api/answers/event.schema.json). */
export type EventEnvelope = Event;

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
