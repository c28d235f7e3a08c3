-- Rate limits and budgets (contract: Budgets, evaluation step 7).
--
-- Every check and change happens here, in the database, atomically: a batch of
-- requests is one call of authz_apply_limits, which locks every row it touches in
-- one global order (rate rows by key, then budget rows by their natural key), so
-- concurrent batches from any number of server processes neither deadlock nor
-- overspend. Every path that changes budget rows (apply, confirm/reject, the
-- expiry sweep) locks budget_usage rows first, in that order, then their holds.

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

create function authz_event_id() returns text language sql volatile as
$$ select 'evt_' || replace(gen_random_uuid()::text, '-', '') $$;

-- Fires budget.threshold and budget.exceeded for a usage row just changed, each
-- at most once per row (= per period), and announces an exhausted budget to
-- every server process. Returns the row with its flags set.
create function authz_budget_events(u budget_usage, now_ts timestamptz) returns budget_usage
language plpgsql as $$
declare
  fire_threshold boolean := u.threshold_pct is not null and u.threshold_fired_at is null
                            and u.consumed >= u.threshold_pct::numeric * u.limit_amount;
  fire_exceeded boolean := u.exceeded_fired_at is null and u.consumed >= u.limit_amount;
  data jsonb;
begin
  if not (fire_threshold or fire_exceeded) then
    return u;
  end if;
  data := jsonb_build_object(
    'agent_id', u.agent_id, 'policy_id', u.policy_id, 'budget_unit', u.unit,
    'budget_limit', u.limit_amount, 'budget_consumed', u.consumed, 'threshold_pct', u.threshold_pct,
    'period', u.period,
    'period_resets_at', to_char(u.period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
  if fire_threshold then
    insert into events (id, account_id, environment, type, created_at, data)
    values (authz_event_id(), u.account_id, u.environment, 'budget.threshold', now_ts,
            data || '{"reason": "budget.below_threshold"}');
    u.threshold_fired_at := now_ts;
  end if;
  if fire_exceeded then
    insert into events (id, account_id, environment, type, created_at, data)
    values (authz_event_id(), u.account_id, u.environment, 'budget.exceeded', now_ts,
            data || '{"reason": "budget.exceeded"}');
    u.exceeded_fired_at := now_ts;
    -- Every server process blocks the agent (runtime/limits/exhausted-agents.ts).
    perform pg_notify('authz_budgets', (authz_usage_json(u)
      || jsonb_build_object('account_id', u.account_id, 'environment', u.environment))::text);
  end if;
  update budget_usage set threshold_fired_at = u.threshold_fired_at, exceeded_fired_at = u.exceeded_fired_at
  where id = u.id;
  return u;
end $$;

-- What the runtime learns of a usage row after a change.
create function authz_usage_json(u budget_usage) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'policy_id', u.policy_id, 'agent_id', u.agent_id, 'unit', u.unit, 'period', u.period,
    'period_end_ms', (extract(epoch from u.period_end) * 1000)::float8,
    'limit', u.limit_amount, 'threshold', u.threshold_pct, 'consumed', u.consumed, 'held', u.held,
    'past_threshold', u.threshold_pct is not null and u.consumed >= u.threshold_pct::numeric * u.limit_amount)
$$;

-- Releases the expired holds of the given usage rows (which the caller has locked).
create function authz_expire_holds(usage_ids bigint[], now_ts timestamptz) returns void
language sql as $$
  with expired as (
    update budget_holds h set status = 'expired', resolved_at = h.expires_at
    where h.usage_id = any (usage_ids) and h.status = 'held' and h.expires_at <= now_ts
    returning h.usage_id, h.amount
  ), sums as (
    select usage_id, sum(amount) as amount from expired group by usage_id
  )
  update budget_usage b set held = b.held - s.amount from sums s where b.id = s.usage_id
$$;

-- Rate limits and budgets for a batch of requests, in order; one row per request:
-- {"outcome": "ok", "budgets": [usage...]} | {"outcome": "rate_limited",
-- "retry_after_ms", "limiter"} | {"outcome": "budget_exceeded", "budget": usage, "cost"}.
--
-- Request: {account_id, environment, agent_id, decision_id, expires_at, amount,
--   rates: [{key, interval_ms, window_ms}], budgets: [{policy_id, unit, period,
--   period_start, period_end, limit, threshold}]} (keys distinct per request).
--
-- GCRA: a limiter of N per window W has interval T = W/N; a request passes when
-- max(tat, now) + T - now <= W (a bucket of N, refilled at N per W), and then
-- tat := max(tat, now) + T. Every limiter of a request must pass, else none moves.
-- Budgets: a request passes when consumed + held + cost <= limit for every budget
-- (cost: 1 for calls, the amount for fiat), else none moves.
--
-- Counters commit without waiting for the WAL flush: the decision written right
-- after (synchronous commit) flushes the WAL past them before its answer is sent.
create function authz_apply_limits(batch jsonb, now_ms double precision)
returns table (i int, result jsonb)
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  req jsonb;
  idx int;
  x jsonb;
  tat double precision;
  wait_ms double precision;
  worst text;
  u budget_usage;
  cost numeric;
  denied jsonb;
  applied jsonb;
  usage_ids bigint[];
begin
  perform set_config('synchronous_commit', 'off', true);

  -- Lock every row the batch touches, in one global order.
  insert into rate_limits as r (account_id, environment, limiter_key, tat_ms)
  select distinct q->>'account_id', q->>'environment', k->>'key', 0::float8
  from jsonb_array_elements(batch) q, jsonb_array_elements(q->'rates') k
  order by 1, 2, 3
  on conflict (account_id, environment, limiter_key) do update set tat_ms = r.tat_ms;

  with upserted as (
    insert into budget_usage as b (account_id, environment, policy_id, agent_id, unit, period, period_start, period_end,
                                   limit_amount, threshold_pct)
    select distinct on (1, 2, 3, 4, 5, 6, 7)
      q->>'account_id', q->>'environment', k->>'policy_id', q->>'agent_id', k->>'unit', k->>'period',
      (k->>'period_start')::timestamptz, (k->>'period_end')::timestamptz, (k->>'limit')::numeric, (k->>'threshold')::float8
    from jsonb_array_elements(batch) q, jsonb_array_elements(q->'budgets') k
    order by 1, 2, 3, 4, 5, 6, 7
    on conflict (account_id, environment, policy_id, agent_id, unit, period, period_start)
      do update set limit_amount = excluded.limit_amount, threshold_pct = excluded.threshold_pct
    returning b.id
  )
  select coalesce(array_agg(id), '{}') into usage_ids from upserted;
  -- Holds whose decision has expired stop counting before anything is checked.
  perform authz_expire_holds(usage_ids, now_ts);

  for req, idx in select value, ordinality::int from jsonb_array_elements(batch) with ordinality loop
    wait_ms := 0;
    worst := null;
    for x in select value from jsonb_array_elements(req->'rates') loop
      -- least(): a clock that stepped back never locks a limiter out for longer than one interval.
      select least(r.tat_ms, now_ms + (x->>'window_ms')::float8) into tat from rate_limits r
      where r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = x->>'key';
      if greatest(tat, now_ms) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - now_ms > wait_ms then
        wait_ms := greatest(tat, now_ms) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - now_ms;
        worst := x->>'key';
      end if;
    end loop;
    -- A microsecond of slack absorbs float rounding of W/N.
    if wait_ms > 0.001 then
      i := idx;
      result := jsonb_build_object('outcome', 'rate_limited', 'retry_after_ms', wait_ms, 'limiter', worst);
      return next;
      continue;
    end if;
    update rate_limits r
    set tat_ms = greatest(least(r.tat_ms, now_ms + (rk.value->>'window_ms')::float8), now_ms) + (rk.value->>'interval_ms')::float8
    from jsonb_array_elements(req->'rates') rk
    where r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = rk.value->>'key';

    denied := null;
    for x in select value from jsonb_array_elements(req->'budgets') loop
      select * into u from budget_usage b
      where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
        and b.agent_id = req->>'agent_id' and b.unit = x->>'unit' and b.period = x->>'period'
        and b.period_start = (x->>'period_start')::timestamptz;
      cost := case when u.unit = 'calls' then 1 else (req->>'amount')::numeric end;
      if u.consumed + u.held + cost > u.limit_amount then
        denied := jsonb_build_object('budget', authz_usage_json(u), 'cost', cost);
        exit;
      end if;
    end loop;
    if denied is not null then
      i := idx;
      result := denied || '{"outcome": "budget_exceeded"}';
      return next;
      continue;
    end if;

    applied := '[]';
    for x in select value from jsonb_array_elements(req->'budgets') loop
      if x->>'unit' = 'calls' then
        update budget_usage b set consumed = b.consumed + 1
        where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
          and b.agent_id = req->>'agent_id' and b.unit = x->>'unit' and b.period = x->>'period'
          and b.period_start = (x->>'period_start')::timestamptz
        returning * into u;
      else
        update budget_usage b set held = b.held + (req->>'amount')::numeric
        where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
          and b.agent_id = req->>'agent_id' and b.unit = x->>'unit' and b.period = x->>'period'
          and b.period_start = (x->>'period_start')::timestamptz
        returning * into u;
        insert into budget_holds (account_id, environment, decision_id, policy_id, usage_id, amount, expires_at, status)
        values (u.account_id, u.environment, req->>'decision_id', u.policy_id, u.id, (req->>'amount')::numeric,
                (req->>'expires_at')::timestamptz, 'held');
      end if;
      u := authz_budget_events(u, now_ts);
      applied := applied || authz_usage_json(u);
    end loop;
    i := idx;
    result := jsonb_build_object('outcome', 'ok', 'budgets', applied);
    return next;
  end loop;
end $$;

-- Confirm (the hold becomes consumption: p_amount when given, else the held
-- amount; it may not exceed the hold) or reject (the hold is released) a
-- decision's holds. Runs in the caller's transaction, beside the decision's own
-- status change. Returns the usage rows after the change.
create function authz_resolve_holds(p_account text, p_environment text, p_decision text, p_confirm boolean,
                                    p_amount numeric, now_ms double precision)
returns setof jsonb
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  h budget_holds;
  u budget_usage;
begin
  perform 1 from budget_usage b
  where b.id in (select usage_id from budget_holds
                 where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held')
  order by b.account_id, b.environment, b.policy_id, b.agent_id, b.unit, b.period, b.period_start
  for update;
  for h in
    update budget_holds set status = case when p_confirm then 'confirmed' else 'released' end, resolved_at = now_ts
    where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held'
    returning *
  loop
    if p_confirm and p_amount is not null and p_amount > h.amount then
      raise exception 'confirmed amount % exceeds the % held for decision %', p_amount, h.amount, p_decision
        using errcode = 'AZ001';
    end if;
    update budget_usage b
    set held = b.held - h.amount,
        consumed = b.consumed + case when p_confirm then coalesce(p_amount, h.amount) else 0 end
    where b.id = h.usage_id
    returning * into u;
    u := authz_budget_events(u, now_ts);
    return next authz_usage_json(u);
  end loop;
end $$;

-- The sweep: releases every expired hold (of one environment, or all).
create function authz_release_expired_holds(now_ms double precision, p_account text default null,
                                            p_environment text default null)
returns int
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  ids bigint[];
begin
  with due as (
    select b.id from budget_usage b
    where b.held > 0
      and (p_account is null or (b.account_id = p_account and b.environment = p_environment))
      and exists (select 1 from budget_holds h where h.usage_id = b.id and h.status = 'held' and h.expires_at <= now_ts)
    order by b.account_id, b.environment, b.policy_id, b.agent_id, b.unit, b.period, b.period_start
    for update
  )
  select coalesce(array_agg(id), '{}') into ids from due;
  perform authz_expire_holds(ids, now_ts);
  return cardinality(ids);
end $$;
