-- Releases the expired holds of the given usage rows (which the caller has locked).
create or replace function authz_expire_holds(usage_ids bigint[], now_ts timestamptz) returns void
language sql as $$
  with expired as (
    update budget_holds h set status = 'expired', resolved_at = h.expires_at
    where h.usage_id = any (usage_ids) and h.status = 'held' and h.expires_at <= now_ts
    returning h.usage_id, h.amount
  ), sums as (
    select usage_id, sum(amount) as amount from expired group by usage_id
  )
  update budget_usage b set held = b.held - s.amount from sums s where b.id = s.usage_id
$$;
