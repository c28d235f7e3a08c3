-- Accounts, API keys, policies, agents, decisions and events.
-- Every row of an account's data carries (account_id, environment): nothing is
-- ever read without both.

create table accounts (
  id          text primary key,
  name        text not null,
  created_at  timestamptz not null
);

create table api_keys (
  id           text primary key,
  account_id   text not null references accounts (id),
  environment  text not null check (environment in ('test', 'live')),
  -- SHA-256 of the full key; the key itself is never stored.
  key_hash     bytea not null unique,
  -- First characters of the key, for display (svc_test_sk_AbCd...).
  key_prefix   text not null,
  scopes       text[] not null,
  created_at   timestamptz not null,
  revoked_at   timestamptz
);

-- One row per environment's policy set: its version is bumped by every change,
-- so other server processes can tell that their compiled table is stale.
create table policy_sets (
  account_id   text not null references accounts (id),
  environment  text not null check (environment in ('test', 'live')),
  version      bigint not null default 0,
  hash         text,
  updated_at   timestamptz not null,
  primary key (account_id, environment)
);

create table policies (
  account_id   text not null,
  environment  text not null,
  id           text not null,
  -- The normalised policy (compiler/policy/types.ts Policy).
  body         jsonb not null,
  created_at   timestamptz not null,
  updated_at   timestamptz not null,
  seq          bigserial not null,
  primary key (account_id, environment, id),
  foreign key (account_id, environment) references policy_sets (account_id, environment)
);
create index policies_list on policies (account_id, environment, seq desc);

create table agents (
  account_id     text not null references accounts (id),
  environment    text not null check (environment in ('test', 'live')),
  agent_id       text not null,
  status         text not null check (status in ('active', 'revoked')),
  first_seen_at  timestamptz not null,
  revoked_at     timestamptz,
  seq            bigserial not null,
  primary key (account_id, environment, agent_id)
);
create index agents_list on agents (account_id, environment, seq desc);

create table decisions (
  account_id          text not null,
  environment         text not null check (environment in ('test', 'live')),
  id                  text not null,
  seq                 bigserial not null,
  agent_id            text not null,
  action              text not null,
  resource            text,
  amount              double precision,
  context             jsonb,
  effect              text not null check (effect in ('allow', 'deny', 'review')),
  reason              text not null,
  policy_id           text,
  matched_policy_ids  text[] not null,
  warnings            jsonb not null,
  -- pending | confirmed | rejected | denied; expired is derived from expires_at.
  status              text not null check (status in ('pending', 'confirmed', 'rejected', 'denied')),
  evaluated_at        timestamptz not null,
  expires_at          timestamptz not null,
  ttl_seconds         integer not null,
  permit_token        text,
  resolved_at         timestamptz,
  confirmed_amount    double precision,
  primary key (account_id, environment, id)
);
create index decisions_list on decisions (account_id, environment, seq desc);
create index decisions_by_agent on decisions (account_id, environment, agent_id, seq desc);

create table events (
  id           text primary key,
  seq          bigserial not null,
  account_id   text not null,
  environment  text not null check (environment in ('test', 'live')),
  type         text not null,
  created_at   timestamptz not null,
  data         jsonb not null
);
create index events_list on events (account_id, environment, seq desc);
