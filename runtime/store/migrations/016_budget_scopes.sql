-- Spend controls for agent runs (docs/budgets-and-limits.md#spend-controls-for-agent-runs):
-- budgets per session and per user beside the per agent ones, and held units
-- beyond money (tokens).
--
-- Key layout. A budget row is keyed by
--   (account_id, environment, policy_id, scope, agent_id, session_id, on_behalf_of, unit, period, period_start)
-- where the scope decides which of the three subject columns carry a value and
-- the others hold '' (not null: a unique key treats nulls as distinct):
--   scope agent:   agent_id = the agent,  session_id = '',       on_behalf_of = ''
--   scope session: agent_id = the agent,  session_id = the run,  on_behalf_of = ''
--   scope user:    agent_id = '',         session_id = '',       on_behalf_of = the user
-- A request touches only the rows of its own key (found through the unique
-- index below), so neither the number of rows it reads nor the time of the
-- limits call grows with other agents' or other sessions' rows.
--
-- Locking order. Every path that changes budget rows (apply, confirm/reject, the
-- expiry sweep) locks them in this key's order, then their holds, as before:
-- one global order, so concurrent batches on any number of processes never
-- deadlock.
--
-- Costs. The runtime sends, per budget of a request, its key and its `cost` (1
-- for calls; the held amount for a currency or tokens, from `amount` or
-- `amounts`), so the limits functions (runtime/store/functions/authz_apply_limits.sql,
-- authz_preview_limits.sql) never decide which amount a unit takes.

alter table budget_usage
  add column scope text not null default 'agent' check (scope in ('agent', 'session', 'user')),
  add column session_id text not null default '',
  add column on_behalf_of text not null default '';

do $$
declare
  c text;
begin
  for c in select conname from pg_constraint where conrelid = 'budget_usage'::regclass and contype = 'u' loop
    execute format('alter table budget_usage drop constraint %I', c);
  end loop;
end $$;
create unique index budget_usage_key on budget_usage
  (account_id, environment, policy_id, scope, agent_id, session_id, on_behalf_of, unit, period, period_start);
-- GET /v1/budgets?on_behalf_of= and ?session_id=: only user rows, only session rows. (The
-- columns of these indexes never change after the insert, so the counters' updates stay HOT.)
create index budget_usage_by_user on budget_usage (account_id, environment, on_behalf_of, period_end) where on_behalf_of <> '';
create index budget_usage_by_session on budget_usage (account_id, environment, session_id, period_end) where session_id <> '';

-- The agent whose decision placed the hold (a user budget's row has no agent:
-- its events name the agent whose confirm crossed the line).
alter table budget_holds add column agent_id text;

-- Functions whose signature changed (runtime/store/functions/authz_budget_events.sql
-- takes the acting agent, authz_resolve_holds.sql amounts per unit). A fresh
-- store never had the old ones.
drop function if exists authz_budget_events(budget_usage, timestamptz);
drop function if exists authz_resolve_holds(text, text, text, boolean, numeric, double precision);
