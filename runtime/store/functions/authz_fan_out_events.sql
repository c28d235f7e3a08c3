-- The trigger events_fan_out (runtime/store/migrations/004_webhooks.sql, 015):
-- every event row fans out to a delivery per matching enabled endpoint, in the
-- same statement that inserts the events, so no event is ever stored without its
-- deliveries, whichever code path wrote it.
create or replace function authz_fan_out_events() returns trigger language plpgsql as $$
begin
  insert into webhook_deliveries (id, account_id, environment, endpoint_id, event_id, status, next_attempt_at, created_at)
  select authz_new_id('whd', e.created_at), e.account_id, e.environment, w.id, e.id, 'pending',
         e.created_at, e.created_at
  from new_events e
  join webhook_endpoints w on w.account_id = e.account_id and w.environment = e.environment
  where w.status = 'enabled' and ('*' = any (w.events) or e.type = any (w.events))
  order by e.seq;
  return null;
end $$;
