-- The labels of a live session, in the order they were added; null when the
-- session does not exist or has ended (`now_ms - idle_s` is later than its last
-- label and its last decision: docs/policies.md#labels). The one definition of
-- "a session's labels now", read by the decision path (store/sessions.ts
-- sessionLabels) and re-checked by authz_decide_batch when a decision was
-- evaluated with this process's remembered labels.
-- PL/pgSQL, not SQL: authz_decide_batch calls it per request, and a SQL
-- function with a subquery is planned at every call; PL/pgSQL keeps the plan.
create or replace function authz_session_labels(account text, env text, sid text, now_ms double precision, idle_s double precision)
returns text[]
language plpgsql stable as $$
declare
  cut constant timestamptz := to_timestamp(now_ms / 1000.0) - make_interval(secs => idle_s);
begin
  return (
    select case when authz_session_live(s.account_id, s.environment, s.session_id, s.seen_at, cut)
        then array(select l.label from session_labels l
                   where l.account_id = s.account_id and l.environment = s.environment and l.session_id = s.session_id
                   order by l.added_at, l.label)
      end
    from sessions s
    where s.account_id = account and s.environment = env and s.session_id = sid);
end $$;
