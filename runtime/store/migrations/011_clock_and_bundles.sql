-- Clock steps and skew in the rate limiters, the test clock's offset, and bundle
-- pushes staged outside the transaction that makes them active.

-- The test clock (AUTHZ_TEST_CLOCK=1): its offset from real time, so that a
-- restart keeps the service's time where POST /admin/clock left it. One row.
create table test_clock (
  id          boolean primary key default true check (id),
  offset_ms   double precision not null
);

-- Rate limits judged on one clock, whose steps cost at most one interval: the
-- limits functions take the test clock's offset (runtime/store/functions/
-- authz_apply_limits.sql, authz_preview_limits.sql), a new signature. (A fresh
-- store never had the old one.)
drop function if exists authz_apply_limits(jsonb, double precision);
drop function if exists authz_preview_limits(jsonb, double precision);

-- Bundle pushes without a long transaction (domain/bundles.ts). A push writes the
-- new set beside the active one, in many short statements, under a generation of
-- its own, and stages its policy.updated events; one short transaction then makes
-- that generation the active one; afterwards the staged events move into
-- `events` and the replaced rows are deleted, again in short statements. So a
-- push of 100,000 policies never holds the store for long (the embedded store
-- has one session: a long transaction there stops every other tenant's writes).
-- Readers see only the active generation's rows (store/policies.ts).
alter table policy_sets add column generation bigint not null default 0;
alter table policies add column generation bigint not null default 0;
alter table policies drop constraint policies_pkey;
alter table policies add primary key (account_id, environment, generation, id);
drop index policies_list;
create index policies_list on policies (account_id, environment, generation, seq desc);
-- A row written without a generation (by hand: an operator's repair) joins the active set.
alter table policies alter column generation drop default;
\ir ../functions/authz_policy_generation.sql
create trigger policies_generation before insert on policies for each row execute function authz_policy_generation();

-- Generations of pushes (0 is every set's first).
create sequence policy_generations;

-- A push under way ('staging': its rows are being written, invisible) or made
-- active ('committed': its events are being moved, the replaced rows deleted).
-- A row left behind by a process that stopped is finished (committed) or undone
-- (staging, after an hour) by the next push or start (BundleService.recover).
create table bundle_pushes (
  generation           bigint primary key,
  account_id           text not null,
  environment          text not null,
  state                text not null check (state in ('staging', 'committed')),
  started_at           timestamptz not null default now(),
  replaced_generation  bigint
);

-- A push's policy.updated events until they move into `events`, in order.
create table bundle_push_events (
  generation   bigint not null,
  ord          int not null,
  id           text not null,
  type         text not null,
  created_at   timestamptz not null,
  data         jsonb not null,
  primary key (generation, ord)
);
