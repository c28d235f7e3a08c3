-- Decisions remember the run and the user they were made for (session_id,
-- on_behalf_of), the digest of the tool call's arguments their permit is bound
-- to (args_digest), and the API key that asked (key_id).
alter table decisions
  add column session_id text,
  add column on_behalf_of text,
  add column args_digest text,
  add column key_id text;

-- GET /v1/decisions?session_id= and ?on_behalf_of=: only rows that have one are indexed.
create index decisions_by_session on decisions (account_id, environment, session_id, seq) where session_id is not null;
create index decisions_by_user on decisions (account_id, environment, on_behalf_of, seq) where on_behalf_of is not null;
