-- History in conditions (docs/history.md): what the service keeps of earlier
-- decisions so that `history.count|sum|exists|denied(...)` can be answered,
-- exactly, across server processes.
--
-- One row per decision that some history probe of its environment's policies
-- can see (its action matches the probe's actions and the probe's scope field
-- is present), written by the same statement as the decision's limits and
-- budgets (runtime/store/functions/authz_apply_limits.sql), under
-- transaction-level advisory locks on the scope keys (authz_history_lock_key).
--
-- kind: 'counted' (allowed, a review that needs no approval, a review awaiting
--   approval or approved) or 'denied' (effect deny, a review denied or timed
--   out). A counted entry stays counted whatever happens to its decision later
--   (confirm, reject, expiry), except a review denied or timed out.
-- amount / confirmed_amount: what `history.sum` adds (confirmed_amount once the
--   decision is confirmed, else amount; none counts 0).
-- match_values: the request's values of the fields the environment's probes
--   MATCH on (`resource`, `context.<path>`), by that name; a field the request
--   lacked is absent (and then matches nothing).
-- keep_until: evaluated_at + the longest window of the environment's probes when
--   the entry was written (never beyond the decision log's retention); the log
--   upkeep deletes rows past it.
create table history_entries (
  id               bigint generated always as identity primary key,
  account_id       text not null,
  environment      text not null,
  decision_id      text not null,
  agent_id         text not null,
  session_id       text,
  on_behalf_of     text,
  action           text not null,
  kind             text not null check (kind in ('counted', 'denied')),
  amount           numeric,
  confirmed_amount numeric,
  match_values     jsonb not null default '{}',
  evaluated_at     timestamptz not null,
  keep_until       timestamptz not null
);

-- One index per scope: a probe reads the entries of one key within its window.
create index history_by_session on history_entries (account_id, environment, session_id, evaluated_at) where session_id is not null;
create index history_by_agent on history_entries (account_id, environment, agent_id, evaluated_at);
create index history_by_user on history_entries (account_id, environment, on_behalf_of, evaluated_at) where on_behalf_of is not null;
create index history_by_environment on history_entries (account_id, environment, evaluated_at);
-- Confirm and review verdicts change an entry by its decision; the upkeep prunes by keep_until.
create index history_by_decision on history_entries (account_id, environment, decision_id);
create index history_by_keep_until on history_entries (keep_until);

-- The history values the decision's candidate policies read (metadata.history).
alter table decisions add column history jsonb;
