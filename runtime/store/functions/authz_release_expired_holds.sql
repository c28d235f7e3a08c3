-- The sweep: releases every expired hold (of one environment, or all), rows locked in the key's order.
create or replace function authz_release_expired_holds(now_ms double precision, p_account text default null,
                                                       p_environment text default null)
returns int
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  ids bigint[];
begin
  with due as (
    select b.id from budget_usage b
    where b.held > 0
      and (p_account is null or (b.account_id = p_account and b.environment = p_environment))
      and exists (select 1 from budget_holds h where h.usage_id = b.id and authz_hold_expired(h.status, h.expires_at, now_ts))
    order by b.account_id, b.environment, b.policy_id, b.scope, b.agent_id, b.session_id, b.on_behalf_of, b.unit, b.period, b.period_start
    for update
  )
  select coalesce(array_agg(id), '{}') into ids from due;
  perform authz_expire_holds(ids, now_ts);
  return cardinality(ids);
end $$;
