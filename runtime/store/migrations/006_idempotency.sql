-- Idempotency-Key (README: Idempotency keys): the outcome of a POST under /v1,
-- stored per (account, environment, key) for 24 hours so that a retry with the
-- same key and body gets the same answer instead of running again.
--
-- A row is 'running' from the moment a request claims its key (the insert is
-- the claim: a concurrent request with the key conflicts on the primary key)
-- until its answer is stored ('completed'). A 5xx answer deletes the row, so a
-- retry runs again. `locked_until` bounds a claim whose process died: after it,
-- a retry with the same body takes the key over.
create table idempotency_keys (
  account_id       text not null,
  environment      text not null,
  idempotency_key  text not null,
  -- sha256 of method, path and the canonical JSON of the body.
  fingerprint      text not null,
  state            text not null check (state in ('running', 'completed')),
  status_code      int,
  content_type     text,
  -- The answer's body; sealed with AUTHZ_MASTER_KEY when one is set (it may
  -- carry a webhook secret). A decision's permit token is never stored.
  body             text,
  body_encrypted   boolean not null default false,
  created_at       timestamptz not null,
  locked_until     timestamptz,
  expires_at       timestamptz not null,
  primary key (account_id, environment, idempotency_key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);
