-- Adds labels to a session (migration 022), opening it first when it is new or
-- has ended (no label and no decision within `idle_seconds`: its labels are
-- dropped and it starts again). The session row is locked for the rest of the
-- caller's transaction, so concurrent adds to one session take turns and the
-- cap holds exactly. `p_cap` null: no cap (a decision whose policy adds labels,
-- checked against the cap when it was decided). Answers 'full' (nothing added)
-- when the labels not yet in the session would take it past `p_cap`, else 'ok'.
-- An empty `p_labels` only opens the session (its first decision).
create or replace function authz_session_add(p_account text, p_environment text, p_session text, p_labels text[],
                                             p_source text, p_decision_id text, p_detail text, p_agent_id text,
                                             p_now timestamptz, idle_seconds double precision, p_cap int)
returns text
language plpgsql as $$
declare
  now_ts constant timestamptz := p_now;
  cut constant timestamptz := p_now - make_interval(secs => idle_seconds);
  seen timestamptz;
  fresh text[];
  held int;
begin
  insert into sessions (account_id, environment, session_id, started_at, seen_at)
  values (p_account, p_environment, p_session, now_ts, now_ts)
  on conflict do nothing;
  select s.seen_at into seen from sessions s
  where s.account_id = p_account and s.environment = p_environment and s.session_id = p_session
  for update;
  if not authz_session_live(p_account, p_environment, p_session, seen, cut) then
    delete from session_labels l
    where l.account_id = p_account and l.environment = p_environment and l.session_id = p_session;
    update sessions s set started_at = now_ts, seen_at = now_ts
    where s.account_id = p_account and s.environment = p_environment and s.session_id = p_session;
  end if;
  select coalesce(array_agg(distinct x.label), '{}') into fresh from unnest(p_labels) as x(label)
  where not exists (select 1 from session_labels l
                    where l.account_id = p_account and l.environment = p_environment and l.session_id = p_session
                      and l.label = x.label);
  if p_cap is not null and cardinality(fresh) > 0 then
    select count(*) into held from session_labels l
    where l.account_id = p_account and l.environment = p_environment and l.session_id = p_session;
    if held + cardinality(fresh) > p_cap then
      return 'full';
    end if;
  end if;
  insert into session_labels (account_id, environment, session_id, label, added_at, source, decision_id, detail, agent_id)
  select p_account, p_environment, p_session, f.label, now_ts, p_source, p_decision_id, p_detail, p_agent_id
  from unnest(fresh) as f(label) order by f.label
  on conflict do nothing;
  if cardinality(fresh) > 0 then
    update sessions s set seen_at = greatest(s.seen_at, now_ts)
    where s.account_id = p_account and s.environment = p_environment and s.session_id = p_session;
  end if;
  return 'ok';
end $$;
