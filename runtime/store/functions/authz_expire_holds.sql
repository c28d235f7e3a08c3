-- Releases the expired holds of the given usage rows (which the caller has locked).
create or replace function authz_expire_holds(usage_ids bigint[], now_ts timestamptz) returns void
language sql as $$
  update budget_usage b set held = b.held - s.amount
  from authz_expire_hold_rows(usage_ids, now_ts) s
  where b.id = s.usage_id
$$;
