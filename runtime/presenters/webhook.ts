/** The public forms of a webhook endpoint and of a delivery with its attempts. */
import type {
  Deleted,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from '../../clients/typescript/wire.js';
import type { DeliveryRow, EndpointRow } from '../store/webhooks.js';

function iso(v: Date | string): string;
function iso(v: Date | string | null): string | null;
function iso(v: Date | string | null): string | null {
  return v === null ? null : new Date(v).toISOString();
}

export function endpointResource(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    events: row.events,
    description: row.description,
    status: row.status,
    standard_webhooks: row.standard_webhooks,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    livemode: row.environment === 'live',
  };
}

/**
 * POST /v1/webhooks: the endpoint and its signing secret (answered this once).
 *
 * @example
 * createdEndpointResource(row, 'whsec_...').secret; // => 'whsec_...'
 */
export function createdEndpointResource(row: EndpointRow, secret: string): WebhookEndpointWithSecret {
  return { ...endpointResource(row), secret };
}

/**
 * DELETE /v1/webhooks/:id.
 *
 * @example
 * deletedEndpointResource('we_1'); // => { id: 'we_1', object: 'webhook_endpoint', deleted: true }
 */
export function deletedEndpointResource(id: string): Deleted {
  return { id, object: 'webhook_endpoint', deleted: true };
}

export function deliveryResource(d: DeliveryRow): WebhookDelivery {
  const last = d.attempt_list[d.attempt_list.length - 1];
  return {
    id: d.id,
    object: 'webhook_delivery',
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempt: d.attempt_list.length,
    status_code: last?.status_code ?? null,
    error: last?.error ?? null,
    duration_ms: last?.duration_ms ?? null,
    next_attempt_at: iso(d.next_attempt_at),
    replay_of: d.replay_of,
    created_at: iso(d.created_at),
    attempts: d.attempt_list.map((a) => ({
      attempt: a.attempt,
      started_at: iso(a.started_at),
      status_code: a.status_code,
      error: a.error,
      duration_ms: a.duration_ms,
      next_attempt_at: iso(a.next_attempt_at),
    })),
  };
}
