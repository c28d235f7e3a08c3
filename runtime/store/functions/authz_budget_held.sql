-- Whether a decision's cost in `unit` is held (every unit but calls: a currency,
-- tokens; held until the decision is confirmed, rejected or expires) rather than
-- consumed at once (calls). The one statement of that rule in the store:
-- authz_budget_take counts by it, authz_apply_limits places a hold by it. (The
-- policy compiler's isHeldUnit, compiler/policy/types.ts, says the same for
-- the runtime's TypeScript.) Plain SQL and immutable: inlined by the planner.
create or replace function authz_budget_held(unit text) returns boolean
language sql immutable as $$
  select unit <> 'calls'
$$;
