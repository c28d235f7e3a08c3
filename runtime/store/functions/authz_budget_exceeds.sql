-- The budget check: a request's cost does not fit a budget row when
-- consumed + held + cost > limit (exact decimals). Its one statement, for
-- authz_apply_limits (on its batch's copy of the locked rows) and
-- authz_preview_limits (on the stored rows) alike; both count only the holds
-- still alive (authz_hold_expired). Plain SQL and immutable: the planner
-- inlines it into the caller's expression (no call at run time).
create or replace function authz_budget_exceeds(u budget_usage, cost numeric) returns boolean
language sql immutable as $$
  select u.consumed + u.held + cost > u.limit_amount
$$;
