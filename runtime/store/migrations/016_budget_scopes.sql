-- Spend controls for agent runs (contract: "Spend controls for agent runs"):
-- budgets per session and per user beside the spec's per agent, and held units
-- beyond money (tokens).
--
-- Key layout. A budget row is keyed by
--   (account_id, environment, policy_id, scope, agent_id, session_id, on_behalf_of, unit, period, period_start)
-- where the scope decides which of the three subject columns carry a value and
-- the others hold '' (not null: a unique key treats nulls as distinct):
--   scope agent:   agent_id = the agent,  session_id = '',       on_behalf_of = ''
--   scope session: agent_id = the agent,  session_id = the run,  on_behalf_of = ''
--   scope user:    agent_id = '',         session_id = '',       on_behalf_of = the user
-- A request touches only the rows of its own key (found through the unique
-- index below), so neither the number of rows it reads nor the time of the
-- limits call grows with other agents' or other sessions' rows.
--
-- Locking order. Every path that changes budget rows (apply, confirm/reject, the
-- expiry sweep) locks them in this key's order, then their holds, as before:
-- one global order, so concurrent batches on any number of processes never
-- deadlock.
--
-- Costs. The runtime sends, per budget of a request, its key and its `cost` (1
-- for calls; the held amount for a currency or tokens, from `amount` or
-- `amounts`), so this function never decides which amount a unit takes.

alter table budget_usage
  add column scope text not null default 'agent' check (scope in ('agent', 'session', 'user')),
  add column session_id text not null default '',
  add column on_behalf_of text not null default '';

do $$
declare
  c text;
begin
  for c in select conname from pg_constraint where conrelid = 'budget_usage'::regclass and contype = 'u' loop
    execute format('alter table budget_usage drop constraint %I', c);
  end loop;
end $$;
create unique index budget_usage_key on budget_usage
  (account_id, environment, policy_id, scope, agent_id, session_id, on_behalf_of, unit, period, period_start);
-- GET /v1/budgets?on_behalf_of= and ?session_id=: only user rows, only session rows. (The
-- columns of these indexes never change after the insert, so the counters' updates stay HOT.)
create index budget_usage_by_user on budget_usage (account_id, environment, on_behalf_of, period_end) where on_behalf_of <> '';
create index budget_usage_by_session on budget_usage (account_id, environment, session_id, period_end) where session_id <> '';

-- The agent whose decision placed the hold (a user budget's row has no agent:
-- its events name the agent whose confirm crossed the line).
alter table budget_holds add column agent_id text;

-- What the runtime learns of a usage row after a change.
create or replace function authz_usage_json(u budget_usage) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'policy_id', u.policy_id, 'scope', u.scope, 'agent_id', nullif(u.agent_id, ''),
    'session_id', nullif(u.session_id, ''), 'on_behalf_of', nullif(u.on_behalf_of, ''),
    'unit', u.unit, 'period', u.period,
    'period_end_ms', (extract(epoch from u.period_end) * 1000)::float8,
    'limit', u.limit_amount, 'threshold', u.threshold_pct, 'consumed', u.consumed, 'held', u.held,
    'past_threshold', u.threshold_pct is not null and u.consumed >= u.threshold_pct::numeric * u.limit_amount)
$$;

-- Fires budget.threshold and budget.exceeded for a usage row just changed, each
-- at most once per row (= per period), and announces an exhausted budget to
-- every server process. `acting_agent`: the agent whose decision (or confirm)
-- changed the row, named as the event's agent_id for a user budget.
drop function authz_budget_events(budget_usage, timestamptz);
create function authz_budget_events(u budget_usage, now_ts timestamptz, acting_agent text) returns budget_usage
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
    'agent_id', case when u.scope = 'user' then acting_agent else u.agent_id end,
    'policy_id', u.policy_id, 'budget_unit', u.unit,
    'budget_limit', u.limit_amount, 'budget_consumed', u.consumed, 'threshold_pct', u.threshold_pct,
    'period', u.period,
    'period_resets_at', to_char(u.period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'scope', u.scope);
  if u.scope = 'session' then data := data || jsonb_build_object('session_id', u.session_id); end if;
  if u.scope = 'user' then data := data || jsonb_build_object('on_behalf_of', u.on_behalf_of); end if;
  if fire_threshold then
    insert into events (id, account_id, environment, type, created_at, data)
    values (authz_new_id('evt', now_ts), u.account_id, u.environment, 'budget.threshold', now_ts,
            data || '{"reason": "budget.below_threshold"}');
    u.threshold_fired_at := now_ts;
  end if;
  if fire_exceeded then
    insert into events (id, account_id, environment, type, created_at, data)
    values (authz_new_id('evt', now_ts), u.account_id, u.environment, 'budget.exceeded', now_ts,
            data || '{"reason": "budget.exceeded"}');
    u.exceeded_fired_at := now_ts;
    -- Every server process blocks the agent, session or user (runtime/limits/exhausted-agents.ts).
    perform pg_notify('authz_budgets', (authz_usage_json(u)
      || jsonb_build_object('account_id', u.account_id, 'environment', u.environment))::text);
  end if;
  update budget_usage set threshold_fired_at = u.threshold_fired_at, exceeded_fired_at = u.exceeded_fired_at
  where id = u.id;
  return u;
end $$;

-- Rate limits and budgets for a batch of requests (011_clock_and_bundles.sql),
-- budgets keyed by scope. Request: {account_id, environment, agent_id,
-- decision_id, expires_at, rates: [...], budgets: [{policy_id, unit, period,
-- period_start, period_end, limit, threshold, scope, agent_id, session_id,
-- on_behalf_of, cost}]}: a budget's agent_id / session_id / on_behalf_of are its
-- row's key ('' where the scope has none); `cost` what the request takes from it.
create or replace function authz_apply_limits(batch jsonb, now_ms double precision, rate_offset_ms double precision default null)
returns table (i int, result jsonb)
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  rate_now constant double precision :=
    case when rate_offset_ms is null then now_ms else extract(epoch from clock_timestamp()) * 1000 + rate_offset_ms end;
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
  row_ids bigint[];
  n int;
begin
  perform set_config('synchronous_commit', 'off', true);

  -- Lock every row the batch touches, in one global order.
  insert into rate_limits as r (account_id, environment, limiter_key, tat_ms)
  select distinct q->>'account_id', q->>'environment', k->>'key', 0::float8
  from jsonb_array_elements(batch) q, jsonb_array_elements(q->'rates') k
  order by 1, 2, 3
  on conflict (account_id, environment, limiter_key) do update set tat_ms = r.tat_ms;

  -- No limiter further ahead than one full window of the judging clock (011).
  update rate_limits r set tat_ms = rate_now + w.window_ms
  from (select distinct q->>'account_id' as account_id, q->>'environment' as environment, k->>'key' as limiter_key,
               (k->>'window_ms')::float8 as window_ms
        from jsonb_array_elements(batch) q, jsonb_array_elements(q->'rates') k) w
  where r.account_id = w.account_id and r.environment = w.environment and r.limiter_key = w.limiter_key
    and r.tat_ms > rate_now + w.window_ms;

  with upserted as (
    insert into budget_usage as b (account_id, environment, policy_id, scope, agent_id, session_id, on_behalf_of,
                                   unit, period, period_start, period_end, limit_amount, threshold_pct)
    select distinct on (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
      q->>'account_id', q->>'environment', k->>'policy_id', k->>'scope', k->>'agent_id', k->>'session_id',
      k->>'on_behalf_of', k->>'unit', k->>'period', (k->>'period_start')::timestamptz,
      (k->>'period_end')::timestamptz, (k->>'limit')::numeric, (k->>'threshold')::float8
    from jsonb_array_elements(batch) q, jsonb_array_elements(q->'budgets') k
    order by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
    on conflict (account_id, environment, policy_id, scope, agent_id, session_id, on_behalf_of, unit, period, period_start)
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
      select r.tat_ms into tat from rate_limits r
      where r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = x->>'key';
      if greatest(tat, rate_now) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - rate_now > wait_ms then
        wait_ms := greatest(tat, rate_now) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - rate_now;
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
    set tat_ms = greatest(r.tat_ms, rate_now) + (rk.value->>'interval_ms')::float8
    from jsonb_array_elements(req->'rates') rk
    where r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = rk.value->>'key';

    -- Each budget's row, once (rows are locked: nothing else moves them meanwhile).
    denied := null;
    row_ids := '{}';
    for x in select value from jsonb_array_elements(req->'budgets') loop
      select * into u from budget_usage b
      where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
        and b.scope = x->>'scope' and b.agent_id = x->>'agent_id' and b.session_id = x->>'session_id'
        and b.on_behalf_of = x->>'on_behalf_of' and b.unit = x->>'unit' and b.period = x->>'period'
        and b.period_start = (x->>'period_start')::timestamptz;
      row_ids := row_ids || u.id;
      cost := (x->>'cost')::numeric;
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
    n := 0;
    for x in select value from jsonb_array_elements(req->'budgets') loop
      n := n + 1;
      cost := (x->>'cost')::numeric;
      if x->>'unit' = 'calls' then
        update budget_usage b set consumed = b.consumed + cost where b.id = row_ids[n] returning * into u;
      else
        update budget_usage b set held = b.held + cost where b.id = row_ids[n] returning * into u;
        insert into budget_holds (account_id, environment, decision_id, policy_id, usage_id, amount, expires_at, status, agent_id)
        values (u.account_id, u.environment, req->>'decision_id', u.policy_id, u.id, cost,
                (req->>'expires_at')::timestamptz, 'held', req->>'agent_id');
      end if;
      u := authz_budget_events(u, now_ts, req->>'agent_id');
      applied := applied || authz_usage_json(u);
    end loop;
    i := idx;
    result := jsonb_build_object('outcome', 'ok', 'budgets', applied);
    return next;
  end loop;
end $$;

-- Confirm (each hold becomes consumption: p_amounts' amount for its unit, else
-- p_amount, else the held amount; never more than the hold) or reject (released)
-- a decision's holds, in the caller's transaction. p_amount alone on holds of two
-- or more units is refused (AZ002: which units). Returns the usage rows after.
drop function authz_resolve_holds(text, text, text, boolean, numeric, double precision);
create function authz_resolve_holds(p_account text, p_environment text, p_decision text, p_confirm boolean,
                                    p_amount numeric, p_amounts jsonb, now_ms double precision)
returns setof jsonb
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  h budget_holds;
  u budget_usage;
  h_unit text;
  units text[];
  confirmed numeric;
begin
  select coalesce(array_agg(distinct b.unit order by b.unit), '{}') into units from budget_usage b
  where b.id in (select usage_id from budget_holds
                 where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held');
  -- amount alone is ambiguous over two units (amounts naming every unit makes it unused).
  if p_confirm and p_amount is not null and cardinality(units) > 1
     and exists (select 1 from unnest(units) x where p_amounts is null or not p_amounts ? x) then
    raise exception '%', array_to_string(units, ', ') using errcode = 'AZ002';
  end if;
  perform 1 from budget_usage b
  where b.id in (select usage_id from budget_holds
                 where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held')
  order by b.account_id, b.environment, b.policy_id, b.scope, b.agent_id, b.session_id, b.on_behalf_of, b.unit, b.period, b.period_start
  for update;
  for h in
    update budget_holds set status = case when p_confirm then 'confirmed' else 'released' end, resolved_at = now_ts
    where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held'
    returning *
  loop
    select b.unit into h_unit from budget_usage b where b.id = h.usage_id;
    confirmed := case when p_confirm then coalesce((p_amounts->>h_unit)::numeric, p_amount, h.amount) else 0 end;
    if confirmed > h.amount then
      raise exception 'confirmed amount % exceeds the % held for decision %', confirmed, h.amount, p_decision
        using errcode = 'AZ001';
    end if;
    update budget_usage b
    set held = b.held - h.amount, consumed = b.consumed + confirmed
    where b.id = h.usage_id
    returning * into u;
    u := authz_budget_events(u, now_ts, h.agent_id);
    return next authz_usage_json(u);
  end loop;
end $$;

-- The sweep: releases every expired hold (of one environment, or all), rows locked in the key's order.
create or replace function authz_release_expired_holds(now_ms double precision, p_account text default null,
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
    order by b.account_id, b.environment, b.policy_id, b.scope, b.agent_id, b.session_id, b.on_behalf_of, b.unit, b.period, b.period_start
    for update
  )
  select coalesce(array_agg(id), '{}') into ids from due;
  perform authz_expire_holds(ids, now_ts);
  return cardinality(ids);
end $$;

-- POST /v1/decisions/preview and GET /v1/budgets/remaining: the same checks read
-- only, budgets keyed and costed as in authz_apply_limits.
create or replace function authz_preview_limits(req jsonb, now_ms double precision, rate_offset_ms double precision default null)
returns jsonb
language plpgsql stable as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  rate_now constant double precision :=
    case when rate_offset_ms is null then now_ms else extract(epoch from clock_timestamp()) * 1000 + rate_offset_ms end;
  x jsonb;
  tat double precision;
  wait_ms double precision := 0;
  worst text;
  u budget_usage;
  expired numeric;
  cost numeric;
  usages jsonb := '[]';
begin
  for x in select value from jsonb_array_elements(req->'rates') loop
    select least(r.tat_ms, rate_now + (x->>'window_ms')::float8) into tat from rate_limits r
    where r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = x->>'key';
    tat := coalesce(tat, 0);
    if greatest(tat, rate_now) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - rate_now > wait_ms then
      wait_ms := greatest(tat, rate_now) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - rate_now;
      worst := x->>'key';
    end if;
  end loop;
  if wait_ms > 0.001 then
    return jsonb_build_object('outcome', 'rate_limited', 'retry_after_ms', wait_ms, 'limiter', worst);
  end if;
  for x in select value from jsonb_array_elements(req->'budgets') loop
    select * into u from budget_usage b
    where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
      and b.scope = x->>'scope' and b.agent_id = x->>'agent_id' and b.session_id = x->>'session_id'
      and b.on_behalf_of = x->>'on_behalf_of' and b.unit = x->>'unit' and b.period = x->>'period'
      and b.period_start = (x->>'period_start')::timestamptz;
    if not found then
      u.account_id := req->>'account_id'; u.environment := req->>'environment'; u.policy_id := x->>'policy_id';
      u.scope := x->>'scope'; u.agent_id := x->>'agent_id'; u.session_id := x->>'session_id';
      u.on_behalf_of := x->>'on_behalf_of'; u.unit := x->>'unit'; u.period := x->>'period';
      u.period_start := (x->>'period_start')::timestamptz; u.period_end := (x->>'period_end')::timestamptz;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
      u.consumed := 0; u.held := 0;
    else
      select coalesce(sum(h.amount), 0) into expired from budget_holds h
      where h.usage_id = u.id and h.status = 'held' and h.expires_at <= now_ts;
      u.held := u.held - expired;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
    end if;
    cost := coalesce((x->>'cost')::numeric, 0);
    if u.consumed + u.held + cost > u.limit_amount then
      return jsonb_build_object('outcome', 'budget_exceeded', 'budget', authz_usage_json(u), 'cost', cost);
    end if;
    -- As the decision would leave it: a call consumed, an amount held.
    if u.unit = 'calls' then u.consumed := u.consumed + cost; else u.held := u.held + cost; end if;
    usages := usages || authz_usage_json(u);
  end loop;
  return jsonb_build_object('outcome', 'ok', 'budgets', usages);
end $$;
