-- Trigger (migration 026): a history entry whose kind or confirmed amount
-- changed (a review's denial, a confirm) ends the leases of the scope keys
-- whose functions see it (its `scopes` bits), as runtime/history/plan.ts names
-- them: account, environment, scope and value joined by chr(31).
create or replace function authz_history_changed()
returns trigger
language plpgsql as $$
begin
  perform authz_history_revoke(array_remove(array[
    case when (new.scopes & 1) <> 0 and new.session_id is not null
      then concat_ws(chr(31), new.account_id, new.environment, 'session', new.session_id) end,
    case when (new.scopes & 2) <> 0 then concat_ws(chr(31), new.account_id, new.environment, 'agent', new.agent_id) end,
    case when (new.scopes & 4) <> 0 and new.on_behalf_of is not null
      then concat_ws(chr(31), new.account_id, new.environment, 'user', new.on_behalf_of) end,
    case when (new.scopes & 8) <> 0 then concat_ws(chr(31), new.account_id, new.environment, 'environment', '') end
  ], null));
  return null;
end $$;
