-- History entries' index keys with the most selective column first (issue 46):
-- every entry of an environment shares its account and environment, so keys
-- that led with them compared those two columns again at every step of every
-- descent. Inserting an entry's primary key and session key cost about 13 us of
-- PostgreSQL CPU with four concurrent writers; with the decision id and the
-- scope value first, about 9 us (the same lookups use them: each query names
-- every leading column by equality).
alter table history_entries drop constraint history_entries_pkey;
alter table history_entries add primary key (decision_id, account_id, environment);

drop index history_by_session, history_by_agent, history_by_user;
create index history_by_session on history_entries (session_id, account_id, environment, action, evaluated_at)
  where session_id is not null and (scopes & 1) <> 0;
create index history_by_agent on history_entries (agent_id, account_id, environment, action, evaluated_at)
  where (scopes & 2) <> 0;
create index history_by_user on history_entries (on_behalf_of, account_id, environment, action, evaluated_at)
  where on_behalf_of is not null and (scopes & 4) <> 0;
