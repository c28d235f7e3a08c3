-- security.alert de-duplication: at most one alert per kind, subject and window,
-- across every server process (the insert that wins writes the event).
create table security_alerts (
  account_id    text not null,
  environment   text not null,
  kind          text not null check (kind in ('deny_spike', 'invalid_permit_tokens', 'request_volume')),
  -- The agent for deny_spike; '' for the account-wide kinds.
  subject       text not null,
  window_start  timestamptz not null,
  event_id      text not null,
  primary key (account_id, environment, kind, subject, window_start)
);
