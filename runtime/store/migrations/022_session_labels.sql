-- Sessions and their labels (issue 47; docs/api.md#sessions, docs/policies.md#labels):
-- what an agent run (account, environment, session_id) has read. A session's
-- label set only grows; the session ends, labels and all, after
-- AUTHZ_SESSION_IDLE_HOURS without a decision or a label.
--
-- `seen_at` is the session's start or its last label; its last decision is read
-- from decisions_by_session (009), so the decision hot path never updates a
-- session row: a process opens a session (one row, at its first decision there)
-- only when it has not seen a decision of it within the idle time
-- (runtime/domain/session-labels.ts). `started_at` bounds the decisions counted
-- as the session's (a session that ended and began again counts afresh).
create table sessions (
  account_id  text not null,
  environment text not null,
  session_id  text not null,
  started_at  timestamptz not null,
  seen_at     timestamptz not null,
  primary key (account_id, environment, session_id)
);
-- The idle sweep (runtime/background/sessions.ts) reads the oldest first.
create index sessions_by_seen on sessions (seen_at);

create table session_labels (
  account_id  text not null,
  environment text not null,
  session_id  text not null,
  label       text not null,
  added_at    timestamptz not null,
  source      text not null check (source in ('policy', 'api', 'gateway')),
  -- The decision whose policy (or whose result, for the gateway) added it.
  decision_id text,
  detail      text,
  -- The agent named by the call that added it (kept for audit; not answered).
  agent_id    text,
  primary key (account_id, environment, session_id, label),
  foreign key (account_id, environment, session_id) references sessions on delete cascade
);

-- The labels a decision was decided with (metadata.session_labels): null when
-- none of its candidate policies reads or adds labels.
alter table decisions add column session_labels text[];
