-- Decision events derived from their decisions (issue 51): a decision.allow /
-- decision.deny event no longer has an `events` row of its own unless an enabled
-- endpoint subscribes to its type (its deliveries need one to name). The event
-- is derived from its decision: id 'evt_' || the decision id's suffix (the same
-- time part, so the same day's partition), created_at its evaluated_at, its body
-- built when read (runtime/events/references.ts). GET /v1/events lists the
-- events rows and these derived events together (runtime/store/events.ts).
--
-- The decisions written before this migration have by-reference event rows
-- (migration 017) with ids of their own, listed as they are: only the decisions
-- numbered after `derived_events_after` (their `seq`) have derived events. The
-- decisions table is locked (SHARE: writers in flight finish first, none starts)
-- while the boundary is read and authz_write_decisions replaced, in this
-- migration's transaction: every decision written after it is written by the
-- new function, whichever version of the service calls it. (The one exception,
-- in a rolling upgrade only: a call of the old function already waiting for
-- the lock when this commits goes on with the old body; its decisions would be
-- listed twice, under their stored and their derived event ids.)
--
-- The list is ordered by time, then (in one millisecond) events rows before
-- derived events, then the order each was stored in: (created_at, seq) for the
-- events, (evaluated_at, seq) for the decisions, whose decisions_by_time index
-- reads them in that order; the list index of events becomes the same.
-- (Built first: the events table is held while it is built, as by any index
-- build; the decisions table only for the last two statements.)
drop index events_list;
create index events_list on events (account_id, environment, created_at, seq);

alter table decision_log_state add column derived_events_after bigint not null default 0;

lock table decisions in share mode;
update decision_log_state set derived_events_after = coalesce((select max(seq) from decisions), 0);

\ir ../functions/authz_write_decisions.sql
