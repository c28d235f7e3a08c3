-- Whether a hold has stopped counting: still 'held' (neither confirmed, released
-- nor already marked expired) and its decision's expiry reached at `now_ts`.
-- The one statement of the condition, for authz_expire_hold_rows (which marks
-- such holds expired: authz_apply_limits before judging, the sweep
-- authz_release_expired_holds), authz_preview_limits and GET
-- /v1/budgets/remaining (runtime/store/limits.ts, usageOfKeys), which leave them
-- out of `held`. Plain SQL and immutable: the planner inlines it into the
-- caller's WHERE, where it is `status = 'held' and expires_at <= now_ts`, the
-- partial index budget_holds_held (usage_id, expires_at) where status = 'held'.
create or replace function authz_hold_expired(status text, expires_at timestamptz, now_ts timestamptz) returns boolean
language sql immutable as $$
  select status = 'held' and expires_at <= now_ts
$$;
