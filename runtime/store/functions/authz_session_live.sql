-- Whether a session is live at `cut` (now minus AUTHZ_SESSION_IDLE_HOURS):
-- its start or last label (`seen`) or its last decision is at `cut` or later
-- (docs/policies.md#labels). The one statement of the rule, used by
-- authz_session_labels (reads), authz_session_add (an ended session starts
-- again) and the idle sweep (store/sessions.ts deleteEndedSessions).
create or replace function authz_session_live(account text, env text, sid text, seen timestamptz, cut timestamptz)
returns boolean
language plpgsql stable as $$
begin
  return seen >= cut or coalesce((
    select d.evaluated_at from decisions d
    where d.account_id = account and d.environment = env and d.session_id = sid
    order by d.seq desc limit 1) >= cut, false);
end $$;
