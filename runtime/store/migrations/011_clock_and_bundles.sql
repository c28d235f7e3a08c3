-- Clock steps and skew in the rate limiters, the test clock's offset, and bundle
-- pushes staged outside the transaction that makes them active.

-- The test clock (AUTHZ_TEST_CLOCK=1): its offset from real time, so that a
-- restart keeps the service's time where POST /admin/clock left it. One row.
create table test_clock (
  id          boolean primary key default true check (id),
  offset_ms   double precision not null
);

-- Rate limits judged on one clock, whose steps cost at most one interval.
--
-- `rate_offset_ms` given (the service clock follows real time, with this offset:
-- 0, or the test clock's): every limiter is judged on the database's clock plus
-- the offset, so server processes whose clocks disagree judge the shared rows
-- alike. Null (a clock that does not follow real time: tests' manual clocks):
-- judged on `now_ms`, as before.
--
-- Whatever the judging clock does, a limiter's state is never left further ahead
-- of it than one full window (a full bucket: tat <= now + W): when it is (the
-- clock stepped back: an NTP step, a restored snapshot, a process whose clock was
-- ahead), the row is brought back to now + W before judging, refused request or
-- not. An empty bucket admits again one interval later, so a step back of any
-- size costs at most one interval, and Retry-After stays true.
--
-- Budgets, holds and periods stay on the service clock (`now_ms`).
drop function authz_apply_limits(jsonb, double precision);
create function authz_apply_limits(batch jsonb, now_ms double precision, rate_offset_ms double precision default null)
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
begin
  perform set_config('synchronous_commit', 'off', true);

  -- Lock every row the batch touches, in one global order.
  insert into rate_limits as r (account_id, environment, limiter_key, tat_ms)
  select distinct q->>'account_id', q->>'environment', k->>'key', 0::float8
  from jsonb_array_elements(batch) q, jsonb_array_elements(q->'rates') k
  order by 1, 2, 3
  on conflict (account_id, environment, limiter_key) do update set tat_ms = r.tat_ms;

  -- No limiter further ahead than one full window of the judging clock (above).
  update rate_limits r set tat_ms = rate_now + w.window_ms
  from (select distinct q->>'account_id' as account_id, q->>'environment' as environment, k->>'key' as limiter_key,
               (k->>'window_ms')::float8 as window_ms
        from jsonb_array_elements(batch) q, jsonb_array_elements(q->'rates') k) w
  where r.account_id = w.account_id and r.environment = w.environment and r.limiter_key = w.limiter_key
    and r.tat_ms > rate_now + w.window_ms;

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

-- POST /v1/decisions/preview judges rate limits as authz_apply_limits does (above).
drop function authz_preview_limits(jsonb, double precision);
create function authz_preview_limits(req jsonb, now_ms double precision, rate_offset_ms double precision default null)
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
    -- least(): as authz_apply_limits would bring a row further ahead than a full window back to it.
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
      and b.agent_id = req->>'agent_id' and b.unit = x->>'unit' and b.period = x->>'period'
      and b.period_start = (x->>'period_start')::timestamptz;
    if not found then
      u.account_id := req->>'account_id'; u.environment := req->>'environment'; u.policy_id := x->>'policy_id';
      u.agent_id := req->>'agent_id'; u.unit := x->>'unit'; u.period := x->>'period';
      u.period_start := (x->>'period_start')::timestamptz; u.period_end := (x->>'period_end')::timestamptz;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
      u.consumed := 0; u.held := 0;
    else
      select coalesce(sum(h.amount), 0) into expired from budget_holds h
      where h.usage_id = u.id and h.status = 'held' and h.expires_at <= now_ts;
      u.held := u.held - expired;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
    end if;
    cost := case when u.unit = 'calls' then 1 else coalesce((req->>'amount')::numeric, 0) end;
    if u.consumed + u.held + cost > u.limit_amount then
      return jsonb_build_object('outcome', 'budget_exceeded', 'budget', authz_usage_json(u), 'cost', cost);
    end if;
    -- As the decision would leave it: a call consumed, an amount held.
    if u.unit = 'calls' then u.consumed := u.consumed + 1; else u.held := u.held + cost; end if;
    usages := usages || authz_usage_json(u);
  end loop;
  return jsonb_build_object('outcome', 'ok', 'budgets', usages);
end $$;

-- Bundle pushes without a long transaction (domain/bundles.ts). A push writes the
-- new set beside the active one, in many short statements, under a generation of
-- its own, and stages its policy.updated events; one short transaction then makes
-- that generation the active one; afterwards the staged events move into
-- `events` and the replaced rows are deleted, again in short statements. So a
-- push of 100,000 policies never holds the store for long (the embedded store
-- has one session: a long transaction there stops every other tenant's writes).
-- Readers see only the active generation's rows (store/policies.ts).
alter table policy_sets add column generation bigint not null default 0;
alter table policies add column generation bigint not null default 0;
alter table policies drop constraint policies_pkey;
alter table policies add primary key (account_id, environment, generation, id);
drop index policies_list;
create index policies_list on policies (account_id, environment, generation, seq desc);
-- A row written without a generation (by hand: an operator's repair) joins the active set.
alter table policies alter column generation drop default;
create function authz_policy_generation() returns trigger language plpgsql as $$
begin
  if new.generation is null then
    select s.generation into new.generation from policy_sets s
    where s.account_id = new.account_id and s.environment = new.environment;
  end if;
  return new;
end $$;
create trigger policies_generation before insert on policies for each row execute function authz_policy_generation();

-- Generations of pushes (0 is every set's first).
create sequence policy_generations;

-- A push under way ('staging': its rows are being written, invisible) or made
-- active ('committed': its events are being moved, the replaced rows deleted).
-- A row left behind by a process that stopped is finished (committed) or undone
-- (staging, after an hour) by the next push or start (BundleService.recover).
create table bundle_pushes (
  generation           bigint primary key,
  account_id           text not null,
  environment          text not null,
  state                text not null check (state in ('staging', 'committed')),
  started_at           timestamptz not null default now(),
  replaced_generation  bigint
);

-- A push's policy.updated events until they move into `events`, in order.
create table bundle_push_events (
  generation   bigint not null,
  ord          int not null,
  id           text not null,
  type         text not null,
  created_at   timestamptz not null,
  data         jsonb not null,
  primary key (generation, ord)
);
