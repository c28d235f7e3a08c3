-- A budget row as a passing decision leaves it: its cost consumed (calls) or
-- held (other units), by authz_budget_held. authz_apply_limits moves its batch's
-- copy of the locked row with it (and places the hold where the unit is held);
-- authz_preview_limits shows with it what the decision would leave.
create or replace function authz_budget_take(u budget_usage, cost numeric) returns budget_usage
language plpgsql immutable as $$
begin
  if authz_budget_held(u.unit) then
    u.held := u.held + cost;
  else
    u.consumed := u.consumed + cost;
  end if;
  return u;
end $$;
