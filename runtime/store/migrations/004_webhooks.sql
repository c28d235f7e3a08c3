-- Webhook endpoints and deliveries (docs/webhooks-and-events.md).
--
-- Every event row fans out to a delivery per matching enabled endpoint, in the
-- same statement that inserts the events (a trigger), so no event is ever
-- stored without its deliveries, whichever code path wrote it. Deliveries live
-- here until they succeed or are abandoned: a restart loses none.

create table webhook_endpoints (
  account_id        text not null,
  environment       text not null check (environment in ('test', 'live')),
  id                text not null,
  url               text not null,
  -- ['*'] or event types.
  events            text[] not null,
  description       text,
  status            text not null check (status in ('enabled', 'disabled')),
  -- whsec_...: sealed with AUTHZ_MASTER_KEY when set (secret_encrypted).
  secret            text not null,
  secret_encrypted  boolean not null,
  created_at        timestamptz not null,
  updated_at        timestamptz not null,
  seq               bigserial not null,
  primary key (account_id, environment, id)
);
create index webhook_endpoints_list on webhook_endpoints (account_id, environment, seq desc);

create table webhook_deliveries (
  id               text primary key,
  account_id       text not null,
  environment      text not null,
  endpoint_id      text not null,
  event_id         text not null,
  -- pending: an attempt is due at next_attempt_at; succeeded; abandoned (after the last retry).
  status           text not null check (status in ('pending', 'succeeded', 'abandoned')),
  attempts         integer not null default 0,
  next_attempt_at  timestamptz,
  -- A dispatcher that claimed the delivery owns it until then (real time, not the service clock).
  locked_until     timestamptz,
  -- The delivery this one replays, if any.
  replay_of        text,
  created_at       timestamptz not null,
  seq              bigserial not null,
  foreign key (account_id, environment, endpoint_id) references webhook_endpoints (account_id, environment, id) on delete cascade
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_list on webhook_deliveries (account_id, environment, endpoint_id, seq desc);

create table webhook_attempts (
  delivery_id      text not null references webhook_deliveries (id) on delete cascade,
  attempt          integer not null,
  started_at       timestamptz not null,
  status_code      integer,
  error            text,
  duration_ms      integer not null,
  -- When the next attempt is due after this one failed; null after a success or the last attempt.
  next_attempt_at  timestamptz,
  primary key (delivery_id, attempt)
);

\ir ../functions/authz_fan_out_events.sql

create trigger events_fan_out after insert on events
  referencing new table as new_events
  for each statement execute function authz_fan_out_events();
