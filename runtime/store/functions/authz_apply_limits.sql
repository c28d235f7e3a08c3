-- Rate limits and budgets for a batch of requests, in order; one row per request:
-- {"outcome": "ok", "budgets": [usage...]} | {"outcome": "rate_limited",
-- "retry_after_ms", "limiter"} | {"outcome": "budget_exceeded", "budget": usage, "cost"}.
-- Tables: runtime/store/migrations/003_limits.sql, 016_budget_scopes.sql.
--
-- Request: {account_id, environment, agent_id, decision_id, expires_at,
--   rates: [{key, interval_ms, window_ms}], budgets: [{policy_id, unit, period,
--   period_start, period_end, limit, threshold, scope, agent_id, session_id,
--   on_behalf_of, cost}]} (keys distinct per request): a budget's agent_id /
--   session_id / on_behalf_of are its row's key ('' where the scope has none);
--   `cost` what the request takes from it (1 for calls, the held amount else).
--
-- Every row the batch touches is locked first, in one global order (rate rows by
-- key, then budget rows by their key), so concurrent batches from any number of
-- server processes neither deadlock nor overspend.
--
-- Rate limits: each request's limiters judged by authz_rate_limited (GCRA) on
-- the clock of authz_rate_now; when all pass, each tat := max(tat, now) + T.
-- Budgets: a request passes when consumed + held + cost <= limit for every budget.
-- Every limiter and budget of a request must pass, else none moves.
--
-- Whatever the judging clock does, a limiter's state is never left further ahead
-- of it than one full window (a full bucket: tat <= now + W): when it is (the
-- clock stepped back: an NTP step, a restored snapshot, a process whose clock was
-- ahead), the row is brought back to now + W before judging, refused request or
-- not. An empty bucket admits again one interval later, so a step back of any
-- size costs at most one interval, and Retry-After stays true. Budgets, holds
-- and periods stay on the service clock (`now_ms`).
--
-- Counters commit without waiting for the WAL flush: the decision written right
-- after (synchronous commit) flushes the WAL past them before its answer is sent.
create or replace function authz_apply_limits(batch jsonb, now_ms double precision, rate_offset_ms double precision default null)
returns table (i int, result jsonb)
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  rate_now constant double precision := authz_rate_now(now_ms, rate_offset_ms);
  req jsonb;
  idx int;
  x jsonb;
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

  -- No limiter further ahead than one full window of the judging clock (above).
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
    -- Every limiter must pass, else none moves.
    result := authz_rate_limited(req, rate_now);
    if result is not null then
      i := idx;
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
