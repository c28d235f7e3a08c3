/** security.alert events, at most one per (kind, subject, window) across processes. */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';

export interface AlertRecord {
  account_id: string;
  environment: Environment;
  kind: 'deny_spike' | 'invalid_permit_tokens' | 'request_volume';
  subject: string;
  window_start: Date;
  created_at: Date;
  data: Record<string, unknown>;
}

/** Stores the alert and its event unless that window's alert exists; true when this call wrote it. */
export async function recordAlert(sql: SqlOrTx, alert: AlertRecord): Promise<boolean> {
  const rows = await sql`
    with claimed as (
      insert into security_alerts (account_id, environment, kind, subject, window_start, event_id)
      values (${alert.account_id}, ${alert.environment}, ${alert.kind}, ${alert.subject}, ${alert.window_start}, authz_event_id())
      on conflict do nothing
      returning event_id
    )
    insert into events (id, account_id, environment, type, created_at, data)
    select event_id, ${alert.account_id}, ${alert.environment}, 'security.alert', ${alert.created_at}, ${sql.json(alert.data as never)}::jsonb
    from claimed
    returning id`;
  return rows.length > 0;
}
