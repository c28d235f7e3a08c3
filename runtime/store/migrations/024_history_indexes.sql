-- History entries with fewer indexes (issue 46): a recorded decision updated a
-- primary key and six indexes (one per scope, one by decision, one by
-- keep_until), about 108 us of PostgreSQL CPU per entry under load; a session
-- read walked every entry of the session in its window, whatever its action.
--
-- scopes: the scopes whose functions saw the entry when it was recorded
--   (1 session, 2 agent, 4 user, 8 environment; runtime/history/plan.ts
--   entryScopes). Each scope's index holds only the entries of its bit, so a
--   decision only some session function sees updates the session index alone.
--   Rows recorded before this migration keep all four.
-- The scope indexes lead with the action after the scope key: a function over
--   named actions reads only those actions' entries (authz_history_value).
-- The decision id is the primary key (one entry per decision): confirm and
--   review verdicts find an entry by it, and the upkeep deletes by it.
-- keep_until is indexed by a BRIN index (entries arrive roughly in its order).
alter table history_entries add column scopes smallint not null default 15;

delete from history_entries a using history_entries b
where a.account_id = b.account_id and a.environment = b.environment and a.decision_id = b.decision_id and a.id < b.id;

drop index history_by_session, history_by_agent, history_by_user, history_by_environment, history_by_decision,
  history_by_keep_until;
alter table history_entries drop column id;
alter table history_entries add primary key (account_id, environment, decision_id);

create index history_by_session on history_entries (account_id, environment, session_id, action, evaluated_at)
  where session_id is not null and (scopes & 1) <> 0;
create index history_by_agent on history_entries (account_id, environment, agent_id, action, evaluated_at)
  where (scopes & 2) <> 0;
create index history_by_user on history_entries (account_id, environment, on_behalf_of, action, evaluated_at)
  where on_behalf_of is not null and (scopes & 4) <> 0;
create index history_by_environment on history_entries (account_id, environment, action, evaluated_at)
  where (scopes & 8) <> 0;
create index history_by_keep_until on history_entries using brin (keep_until);
