-- Decisions whose history was decided from a lease (migration 026,
-- runtime/history/leases.ts), stored with their history entries in one
-- statement:
-- 1. the keys in `locked` are locked (in one global order, as the limits gate
--    and a new holder lock them), so this waits for an earlier write of the same
--    keys by the same holder to commit: the keys of every decision that leaves
--    an entry or names one in `after` (migration 028);
-- 2. every lease the batch decided from must still be at the epoch it was taken
--    with;
-- 3. the decisions (authz_write_decisions, whose result this returns), each
--    entry as columns of its decision's row (h_scopes, h_denied, h_match,
--    h_keep_s: migration 029);
-- 4. every entry the decisions were decided from that was not stored when they
--    were (`after`) must be stored now, by an earlier write or this one.
-- When 2 or 4 fails, nothing is written and the call fails with SQLSTATE AZL01:
-- the caller decides those decisions again through the limits gate.
--
-- A decision that leaves no entry and names none in `after` (a deny that no
-- history.denied sees) needs only step 2, without the lock: it changes no key,
-- and every change to a leased key's history (the gate, a confirm, a review's
-- denial, a new holder) moves its epoch in the same transaction, so an epoch
-- that still stands when checked means the store held, at that moment, the
-- history the decision read (docs/history.md#leases). Waiting for the lock made
-- it wait for another batch's commit whenever the two shared a session.
--
-- enable_seqscan off: each connection keeps the plans PL/pgSQL made at its first
-- calls, which are made while history_leases is still nearly empty (the leases
-- are taken as the first decisions arrive), and a plan that then chose a
-- sequential scan kept reading every lease of the table for each batch (measured:
-- about a third of the batches, 2,000 rows each, with 2,000 sessions; 16 us of
-- PostgreSQL CPU per decision). The lookups here are by primary key.
-- plan_cache_mode force_generic_plan: the `after` check's plan for given ids
-- would prune the decisions' partitions when made, so PostgreSQL would plan it
-- again at every call (authz_history_value.sql).
--
-- lock_keys, epochs: each lease's key and epoch (distinct keys, one epoch each);
-- locked: the keys to lock (some of lock_keys);
-- after: [{account_id, environment, decision_id}].
create or replace function authz_write_leased(decisions jsonb, decision_events jsonb, agents jsonb, agent_events jsonb,
                                              lock_keys text[], epochs bigint[], locked text[],
                                              after jsonb)
returns setof text
language plpgsql
set enable_seqscan = off
set plan_cache_mode = force_generic_plan
as $$
begin
  -- One statement (not one per key): the locks are taken in the sorted rows' order.
  if cardinality(locked) > 0 then
    perform pg_advisory_xact_lock(s.h) from (select distinct hashtextextended(k, 0) as h from unnest(locked) k order by 1) s;
  end if;
  -- Epochs are unique across leases (one sequence), so each key's row at its epoch is one row matching both lists.
  if cardinality(epochs) <> cardinality(lock_keys)
     or (select count(*) from history_leases l where l.lock_key = any (lock_keys) and l.epoch = any (epochs)) <> cardinality(lock_keys) then
    raise exception using errcode = 'AZL01', message = 'a history lease this batch decided from has ended';
  end if;
  return query select authz_write_decisions(decisions, decision_events, agents, agent_events);
  -- An entry is a gate's row or its decision's columns (migration 029); each looked up by its own key.
  if jsonb_array_length(after) > 0 and exists (
    select 1 from jsonb_to_recordset(after) as a(account_id text, environment text, decision_id text)
    where not exists (select 1 from history_gate_entries g
                      where g.decision_id = a.decision_id and g.account_id = a.account_id and g.environment = a.environment)
      and not exists (select 1 from decisions d
                      where d.account_id = a.account_id and d.environment = a.environment and d.id = a.decision_id
                        and d.h_scopes is not null)) then
    raise exception using errcode = 'AZL01', message = 'an entry this batch decided from was not stored';
  end if;
end $$;
