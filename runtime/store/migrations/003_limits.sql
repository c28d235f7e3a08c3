-- Rate limits and budgets (docs/budgets-and-limits.md#budgets).
--
-- Every check and change happens here, in the database, atomically: a batch of
-- requests is one call of authz_apply_limits, which locks every row it touches in
-- one global order (rate rows by key, then budget rows by their natural key), so
-- concurrent batches from any number of server processes neither deadlock nor
-- overspend. Every path that changes budget rows (apply, confirm/reject, the
-- expiry sweep) locks budget_usage rows first, in that order, then their holds.
-- The functions live in runtime/store/functions/ (authz_apply_limits.sql and the
-- others it names); this file makes their tables.

-- GCRA state: one row per limiter (an API key, or a policy's window for one
-- agent). `tat_ms`: the theoretical arrival time, in ms since the epoch.
create table rate_limits (
  account_id   text not null,
  environment  text not null,
  limiter_key  text not null,
  tat_ms       double precision not null,
  primary key (account_id, environment, limiter_key)
);

-- Accounting per (policy, agent, period): one row per period, so "once per
-- period" is a flag on the row and a new period starts from zero.
create table budget_usage (
  id                  bigserial primary key,
  account_id          text not null,
  environment         text not null,
  policy_id           text not null,
  agent_id            text not null,
  unit                text not null,
  period              text not null,
  period_start        timestamptz not null,
  period_end          timestamptz not null,
  -- The policy's limit and threshold when the row was last touched.
  limit_amount        numeric not null,
  threshold_pct       double precision,
  consumed            numeric not null default 0,
  -- Sum of this row's holds with status 'held'.
  held                numeric not null default 0,
  threshold_fired_at  timestamptz,
  exceeded_fired_at   timestamptz,
  unique (account_id, environment, policy_id, agent_id, unit, period, period_start)
);
create index budget_usage_by_agent on budget_usage (account_id, environment, agent_id, period_end);
create index budget_usage_current on budget_usage (account_id, environment, period_end);

-- A fiat budget's hold of a decision's amount, until confirm (consumption),
-- reject (released) or the decision's expiry (expired).
create table budget_holds (
  account_id   text not null,
  environment  text not null,
  decision_id  text not null,
  policy_id    text not null,
  -- The budget_usage row (no foreign key: only authz_apply_limits writes holds,
  -- with the row locked, and the check would cost a query per hold).
  usage_id     bigint not null,
  amount       numeric not null,
  expires_at   timestamptz not null,
  status       text not null check (status in ('held', 'confirmed', 'released', 'expired')),
  resolved_at  timestamptz,
  primary key (account_id, environment, decision_id, policy_id)
);
-- Every batch looks up its rows' expired holds: with expires_at in the key that
-- is a range scan touching only the expired ones, however many are held.
create index budget_holds_held on budget_holds (usage_id, expires_at) where status = 'held';
