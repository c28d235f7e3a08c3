-- Trigger (migrations 026 and 029): a history entry whose kind or confirmed
-- amount changed (a review's denial, a confirm) ends the leases of the scope
-- keys whose functions see it (its scope bits), as runtime/history/plan.ts names
-- them: account, environment, scope and value joined by chr(31). On
-- history_gate_entries (no argument) the entry is the row; on decisions
-- (argument 'decisions', migration 029) its h_* columns.
create or replace function authz_history_changed()
returns trigger
language plpgsql as $$
declare
  bits smallint;
begin
  -- Each table's column in its own statement: PL/pgSQL resolves a record's fields when it runs one.
  if tg_nargs > 0 and tg_argv[0] = 'decisions' then
    bits := new.h_scopes;
  else
    bits := new.scopes;
  end if;
  perform authz_history_revoke(array_remove(array[
    case when (bits & 1) <> 0 and new.session_id is not null
      then concat_ws(chr(31), new.account_id, new.environment, 'session', new.session_id) end,
    case when (bits & 2) <> 0 then concat_ws(chr(31), new.account_id, new.environment, 'agent', new.agent_id) end,
    case when (bits & 4) <> 0 and new.on_behalf_of is not null
      then concat_ws(chr(31), new.account_id, new.environment, 'user', new.on_behalf_of) end,
    case when (bits & 8) <> 0 then concat_ws(chr(31), new.account_id, new.environment, 'environment', '') end
  ], null));
  return null;
end $$;
