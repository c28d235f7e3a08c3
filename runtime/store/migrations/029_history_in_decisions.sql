-- A leased decision's history entry is columns of its decision row (issue 46),
-- not a row of its own: docs/history.md#where-entries-are-kept.
--
-- A decision decided from history leases is written in the same statement as
-- its entry (functions/authz_write_leased.sql), so the entry needs nothing the
-- decision row does not hold but four columns. Its own row cost a heap tuple, a
-- primary-key entry and a BRIN entry besides its scope index: about 20 us of
-- PostgreSQL CPU per history allow (bench/REPORT.md, issue 46, eighth session).
-- The limits gate records its entry before its decision is written (another
-- statement, often another transaction), so its entries keep their table,
-- renamed history_gate_entries. `history_entries` is now the view of both: every
-- reader (authz_history_value, a lease's first read, the leased write's `after`
-- check) reads it.
--
-- h_scopes: the scopes whose functions see the entry (as history_gate_entries.scopes);
--   null: the decision has no entry here (none, or the gate's).
-- h_denied: the entry is 'denied' (a denial a history.denied function sees, or a
--   review denied or timed out since: store/reviews.ts sets it with the verdict).
-- h_match: the MATCH values (null: none).
-- h_keep_s: keep_until - evaluated_at, in seconds.
-- The amount and confirmed amount are the decision's own (`amount`,
-- `confirmed_amount`, float8; as text, the shortest decimal that reads back as
-- the same float, which is what a gate entry stores from the JSON number).
--
-- Each scope has its own partial index on the decisions, like the gate's
-- entries (migrations 024 and 027). The decisions are partitioned by id, whose
-- time is the decision's evaluated_at (runtime/ids.ts; domain/decisions.ts makes
-- both from one clock reading): authz_history_value reads only the partitions of
-- ids from its window on (the view's log_id).
alter table history_entries rename to history_gate_entries;
alter table history_gate_entries rename constraint history_entries_pkey to history_gate_entries_pkey;

alter table decisions add column h_scopes smallint, add column h_denied boolean, add column h_match jsonb,
  add column h_keep_s double precision;

create index decisions_history_by_session on decisions (session_id, account_id, environment, action, evaluated_at)
  where session_id is not null and (h_scopes & 1) <> 0;
create index decisions_history_by_agent on decisions (agent_id, account_id, environment, action, evaluated_at)
  where (h_scopes & 2) <> 0;
create index decisions_history_by_user on decisions (on_behalf_of, account_id, environment, action, evaluated_at)
  where on_behalf_of is not null and (h_scopes & 4) <> 0;
create index decisions_history_by_environment on decisions (account_id, environment, action, evaluated_at)
  where (h_scopes & 8) <> 0;

-- Every history entry. log_id: for an entry of the decisions, its decision id
-- (their partition key, byte order); for a gate entry 'dec_~', above every
-- decision id. So a lower bound on log_id (authz_history_value, a lease's
-- first read) prunes the decisions' partitions and is never what drops a gate
-- entry: the gate's table is read by its own indexes and pruned by keep_until.
create view history_entries as
  select g.account_id, g.environment, g.decision_id, 'dec_~'::text as log_id, g.agent_id, g.session_id,
    g.on_behalf_of, g.action, g.kind, g.amount, g.confirmed_amount, g.match_values, g.evaluated_at, g.keep_until,
    g.scopes
  from history_gate_entries g
  union all
  select d.account_id, d.environment, d.id collate "default", d.id, d.agent_id, d.session_id,
    d.on_behalf_of, d.action, case when d.h_denied then 'denied' else 'counted' end, d.amount::text::numeric,
    d.confirmed_amount::text::numeric, coalesce(d.h_match, '{}'::jsonb), d.evaluated_at,
    d.evaluated_at + d.h_keep_s * interval '1 second', d.h_scopes
  from decisions d
  where d.h_scopes is not null;

-- A leased entry counted or summed differently from now on (a confirmed amount,
-- a review's denial) ends the leases of its scope keys, as the gate's entries'
-- trigger does (migration 026).
\ir ../functions/authz_history_changed.sql
create trigger decisions_history_changed after update of h_denied, confirmed_amount on decisions
  for each row when (new.h_scopes is not null
    and (old.h_denied is distinct from new.h_denied or old.confirmed_amount is distinct from new.confirmed_amount))
  execute function authz_history_changed('decisions');

-- authz_write_leased no longer takes the entries apart from the decisions.
drop function if exists authz_write_leased(jsonb, jsonb, jsonb, jsonb, jsonb, text[], bigint[], text[], jsonb);
