-- The decision log in daily time partitions (docs/operations.md#decision-log-retention;
-- docs/operations.md "Decision log retention").
--
-- decisions, events, webhook_deliveries and webhook_attempts are partitioned BY
-- RANGE on their own id (attempts on delivery_id). Ids sort by the time they were
-- made (runtime/ids.ts: prefix, '_', 8 base62 characters of the ms time in an
-- ASCII-ordered alphabet, 16 random characters), so one day is one id range:
-- [prefix_<time of 00:00 UTC>, prefix_<time of the next 00:00 UTC>) in byte
-- order. The key is COLLATE "C" (byte order, whatever the database's collation).
-- Hence the primary keys stay as they were, foreign keys keep working, and a
-- lookup by id is pruned to one partition with no extra predicate.
--
-- Each table has a DEFAULT partition: an insert never fails for want of a
-- partition, whatever the clock does. It holds the rows of days that had no
-- partition yet (created ahead by runtime/store/log-partitions.ts) and the rows
-- whose ids predate the time-sortable format (before migration 008 ids were 24
-- random base62 characters: their "time" is noise). Creating a day's partition
-- moves the default's rows of its range into it (authz_create_log_partition).
--
-- An existing store is converted in place: each table is renamed, its partitioned
-- successor created with the same columns, constraints and indexes, a partition
-- made for every day its rows were written on, and the rows copied (one pass).

\ir ../functions/authz_id_time.sql

\ir ../functions/authz_id_floor.sql

\ir ../functions/authz_log_key.sql

\ir ../functions/authz_create_log_partition.sql

-- ---------------------------------------------------------------------------
-- Conversion of the existing tables.

alter table webhook_attempts rename to webhook_attempts_unpartitioned;
alter table webhook_deliveries rename to webhook_deliveries_unpartitioned;
alter table events rename to events_unpartitioned;
alter table decisions rename to decisions_unpartitioned;
drop trigger events_fan_out on events_unpartitioned;

create table decisions (
  account_id          text not null,
  environment         text not null,
  id                  text collate "C" not null,
  seq                 bigint not null default nextval('decisions_seq_seq'),
  agent_id            text not null,
  action              text not null,
  resource            text,
  amount              double precision,
  context             jsonb,
  effect              text not null,
  reason              text not null,
  policy_id           text,
  matched_policy_ids  text[] not null,
  warnings            jsonb not null,
  status              text not null,
  evaluated_at        timestamptz not null,
  expires_at          timestamptz not null,
  ttl_seconds         integer not null,
  permit_token        text,
  resolved_at         timestamptz,
  confirmed_amount    double precision,
  session_id          text,
  on_behalf_of        text,
  args_digest         text,
  key_id              text,
  review_status       text,
  reviewer            text,
  review_note         text,
  reviewed_at         timestamptz,
  reviewer_key_id     text,
  approval_expires_at timestamptz,
  shadow              jsonb,
  constraint decisions_environment_check check (environment in ('test', 'live')),
  constraint decisions_effect_check check (effect in ('allow', 'deny', 'review')),
  constraint decisions_status_check check (status in ('pending', 'confirmed', 'rejected', 'denied', 'awaiting_approval')),
  constraint decisions_review_status_check check (review_status in ('open', 'approved', 'denied'))
) partition by range (id);

create table events (
  id           text collate "C" not null,
  seq          bigint not null default nextval('events_seq_seq'),
  account_id   text not null,
  environment  text not null,
  type         text not null,
  created_at   timestamptz not null,
  data         jsonb not null,
  constraint events_environment_check check (environment in ('test', 'live'))
) partition by range (id);

create table webhook_deliveries (
  id               text collate "C" not null,
  account_id       text not null,
  environment      text not null,
  endpoint_id      text not null,
  event_id         text collate "C" not null,
  status           text not null,
  attempts         integer not null default 0,
  next_attempt_at  timestamptz,
  locked_until     timestamptz,
  replay_of        text,
  created_at       timestamptz not null,
  seq              bigint not null default nextval('webhook_deliveries_seq_seq'),
  constraint webhook_deliveries_status_check check (status in ('pending', 'succeeded', 'abandoned'))
) partition by range (id);

create table webhook_attempts (
  delivery_id      text collate "C" not null,
  attempt          integer not null,
  started_at       timestamptz not null,
  status_code      integer,
  error            text,
  duration_ms      integer not null,
  next_attempt_at  timestamptz
) partition by range (delivery_id);

create table decisions_default partition of decisions default;
create table events_default partition of events default;
create table webhook_deliveries_default partition of webhook_deliveries default;
create table webhook_attempts_default partition of webhook_attempts default;

-- A partition for every day the existing rows were written on (rows whose ids
-- predate the time-sortable format land wherever their id sorts, mostly in the
-- default partition).
select authz_create_log_partition('decisions', d)
from (select distinct (evaluated_at at time zone 'UTC')::date as d from decisions_unpartitioned) days;
select authz_create_log_partition('events', d)
from (select distinct (created_at at time zone 'UTC')::date as d from events_unpartitioned) days;
select authz_create_log_partition('webhook_deliveries', d)
from (select distinct (created_at at time zone 'UTC')::date as d from webhook_deliveries_unpartitioned) days;

insert into decisions select * from decisions_unpartitioned;
insert into events select * from events_unpartitioned;
insert into webhook_deliveries select * from webhook_deliveries_unpartitioned;
insert into webhook_attempts select * from webhook_attempts_unpartitioned;

alter sequence decisions_seq_seq owned by decisions.seq;
alter sequence events_seq_seq owned by events.seq;
alter sequence webhook_deliveries_seq_seq owned by webhook_deliveries.seq;
drop table webhook_attempts_unpartitioned;
drop table webhook_deliveries_unpartitioned;
drop table events_unpartitioned;
drop table decisions_unpartitioned;

-- Keys and indexes as before (created on the parent: every partition gets its own).
alter table decisions add constraint decisions_pkey primary key (account_id, environment, id);
create index decisions_list on decisions (account_id, environment, seq desc);
create index decisions_by_agent on decisions (account_id, environment, agent_id, seq desc);
create index decisions_by_effect on decisions (account_id, environment, effect, seq desc) where effect <> 'allow';
create index decisions_by_reason on decisions (account_id, environment, reason, seq desc) where reason <> 'policy.matched';
create index decisions_by_session on decisions (account_id, environment, session_id, seq) where session_id is not null;
create index decisions_by_user on decisions (account_id, environment, on_behalf_of, seq) where on_behalf_of is not null;
create index decisions_reviews on decisions (account_id, environment, review_status, seq) where review_status is not null;
create index decisions_awaiting on decisions (approval_expires_at) where status = 'awaiting_approval';
create index decisions_by_time on decisions (account_id, environment, evaluated_at, seq);
create index decisions_shadow_diverged on decisions (account_id, environment, seq desc) where shadow is not null;

alter table events add constraint events_pkey primary key (id);
create index events_list on events (account_id, environment, seq desc);
create trigger events_fan_out after insert on events
  referencing new table as new_events
  for each statement execute function authz_fan_out_events();

alter table webhook_deliveries add constraint webhook_deliveries_pkey primary key (id);
alter table webhook_deliveries add constraint webhook_deliveries_account_id_environment_endpoint_id_fkey
  foreign key (account_id, environment, endpoint_id) references webhook_endpoints (account_id, environment, id) on delete cascade;
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_list on webhook_deliveries (account_id, environment, endpoint_id, seq desc);

alter table webhook_attempts add constraint webhook_attempts_pkey primary key (delivery_id, attempt);
alter table webhook_attempts add constraint webhook_attempts_delivery_id_fkey
  foreign key (delivery_id) references webhook_deliveries (id) on delete cascade;

-- Rows written before the time-sortable ids (their id's time part is not their
-- time): a time-range read may narrow itself by id range only after the newest
-- of them (runtime/store/log-partitions.ts). Null: there are none.
create table decision_log_state (
  one             boolean primary key default true check (one),
  legacy_until    timestamptz
);
insert into decision_log_state (legacy_until)
select max(evaluated_at) from decisions
where substr(id, 5, 8) <> authz_id_time(floor(extract(epoch from evaluated_at) * 1000)::bigint);
