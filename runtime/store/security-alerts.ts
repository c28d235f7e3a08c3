/** security.alert events, at most one per (kind, subject, window) across processes. */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import type { EventRow } from './events.js';

export interface AlertRecord {
  account_id: string;
  environment: Environment;
  kind: 'deny_spike' | 'invalid_permit_tokens' | 'request_volume';
  subject: string;
  window_start: Date;
  /** Its security.alert event, stored only when this window's alert is new. */
  event: EventRow;
}

/** Stores the alert and its event unless that window's alert exists; true when this call wrote it. */
export async function recordAlert(sql: SqlOrTx, alert: AlertRecord): Promise<boolean> {
  const rows = await sql`
    with claimed as (
      insert into security_alerts (account_id, environment, kind, subject, window_start, event_id)
      values (${alert.account_id}, ${alert.environment}, ${alert.kind}, ${alert.subject}, ${alert.window_start}, ${alert.event.id})
      on conflict do nothing
      returning event_id
    )
    insert into events (id, account_id, environment, type, created_at, data)
    select event_id, ${alert.account_id}, ${alert.environment}, ${alert.event.type}, ${alert.event.created_at}, ${sql.json(alert.event.data as never)}::jsonb
    from claimed
    returning id`;
  return rows.length > 0;
}
