-- The trigger policies_generation (runtime/store/migrations/011_clock_and_bundles.sql):
-- a policy row written without a generation (by hand: an operator's repair)
-- joins its set's active generation.
create or replace function authz_policy_generation() returns trigger language plpgsql as $$
begin
  if new.generation is null then
    select s.generation into new.generation from policy_sets s
    where s.account_id = new.account_id and s.environment = new.environment;
  end if;
  return new;
end $$;
