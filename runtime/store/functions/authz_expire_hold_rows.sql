-- Marks the expired holds (authz_hold_expired) of the given usage rows (which
-- the caller has locked) expired and says what they released per row:
-- (usage_id, amount). The rows' `held` is the caller's to lower:
-- authz_expire_holds does it in the table, authz_apply_limits on its batch's
-- copy of the rows.
--
-- PL/pgSQL, not SQL: it runs in every budgeted batch, and a SQL function that
-- returns a set is planned at every call; PL/pgSQL keeps the plan.
create or replace function authz_expire_hold_rows(usage_ids bigint[], now_ts timestamptz)
returns table (usage_id bigint, amount numeric)
language plpgsql rows 10 as $$
begin
  return query
    with expired as (
      update budget_holds h set status = 'expired', resolved_at = h.expires_at
      where h.usage_id = any (usage_ids) and authz_hold_expired(h.status, h.expires_at, now_ts)
      returning h.usage_id, h.amount
    )
    select e.usage_id, sum(e.amount) from expired e group by e.usage_id;
end $$;
