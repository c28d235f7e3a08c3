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
-- Rate limits: each request's limiters judged by authz_rate_judge (GCRA) on
-- the clock of authz_rate_now; when all pass, each tat := max(tat, now) + T.
-- Like the budgets below, on the batch's copy of the locked rows, each moved
-- limiter written once after the loop.
-- Budgets: a request passes when no budget is exceeded (authz_budget_exceeds:
-- consumed + held + cost > limit); its cost is then consumed or held
-- (authz_budget_take; a hold placed where authz_budget_held says so).
-- The batch judges and counts on its own copy of the (locked) budget rows, in
-- request order, and writes each moved row once after the loop, and its holds in
-- one insert: the same results as a statement per request and budget, without a
-- new row version of the same row per request.
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
-- History (docs/history.md): a request's `history` ({at_ms, checks: [check with
-- lo, hi], record: entry or null, locks: [scope key...]}, or null) is judged
-- after its rate limits: every check's value (authz_history_value, at the
-- request's at_ms) must lie within [lo, hi] (hi null: no bound), the values the
-- runtime's evaluation gave this outcome for; when one does not, the request is
-- answered {"outcome": "history_stale", "history": [values]} (its rate limits
-- counted, nothing else moved) and the runtime evaluates it again with those
-- values. Else, once its budgets pass or not, its entry is recorded (kind
-- 'denied' when a budget denied it) and the answer carries "history": [values].
-- The scope keys of every request of the batch (those its probes read and those
-- that can see its entry) are locked first, transaction-level advisory locks in
-- one global order (after the limiters and budget rows), so a read and the
-- record it leads to are atomic with respect to every decision of those keys,
-- on any number of processes. Each entry is inserted at once: the next request
-- of the batch sees it. The leases of those keys end (authz_history_revoke):
-- a process that decided them from memory reads them again.
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
  -- Expired holds released per budget row (its id, the amount).
  expired_ids bigint[];
  expired_amounts numeric[];
  -- The batch's limiters (locked): key (account, environment, limiter joined by chr(31)), state, whether moved.
  rate_keys text[];
  rate_accounts text[];
  rate_envs text[];
  rate_limiters text[];
  rate_tats double precision[];
  rate_moved boolean[];
  -- The batch's budget rows (locked), their keys, and which of them moved: judged
  -- and counted here, written back once per row after the loop.
  brows budget_usage[];
  row_keys text[];
  changed boolean[];
  row_ix int[];
  pos int;
  n int;
  -- The holds taken, inserted in one statement after the loop.
  hold_rows int[] := '{}';
  hold_decisions text[] := '{}';
  hold_amounts numeric[] := '{}';
  hold_expiries timestamptz[] := '{}';
  hold_agents text[] := '{}';
  -- History: a request's values, whether one is out of its range, the lock keys.
  hist jsonb;
  hvalues jsonb;
  hv numeric;
  stale boolean;
  lock_key bigint;
  has_rates boolean;
  has_budgets boolean;
begin
  perform set_config('synchronous_commit', 'off', true);

  -- Lock every limiter the batch touches, in one global order, and take the batch's
  -- copy of them from the same statement (judged and moved here, written back once
  -- each after the loop). A limiter further ahead than one full window of the
  -- judging clock (above) is copied as now + W and marked moved, so it is written
  -- back so even when every request is refused.
  -- (A batch without rates, or without budgets, skips its statement: history-only batches.)
  rate_keys := '{}'; rate_accounts := '{}'; rate_envs := '{}'; rate_limiters := '{}'; rate_tats := '{}'; rate_moved := '{}';
  usage_ids := '{}'; brows := '{}'; row_keys := '{}'; changed := '{}';
  if jsonb_path_exists(batch, '$[*].rates[*]') then
  with w as (
    select q->>'account_id' as account_id, q->>'environment' as environment, k->>'key' as limiter_key,
           min((k->>'window_ms')::float8) as window_ms
    from jsonb_array_elements(batch) q, jsonb_array_elements(q->'rates') k
    group by 1, 2, 3
  ), locked as (
    insert into rate_limits as r (account_id, environment, limiter_key, tat_ms)
    select w.account_id, w.environment, w.limiter_key, 0::float8 from w
    order by 1, 2, 3
    on conflict (account_id, environment, limiter_key) do update set tat_ms = r.tat_ms
    returning r.account_id, r.environment, r.limiter_key, r.tat_ms
  )
  select coalesce(array_agg(concat_ws(chr(31), l.account_id, l.environment, l.limiter_key)), '{}'),
         coalesce(array_agg(l.account_id), '{}'), coalesce(array_agg(l.environment), '{}'), coalesce(array_agg(l.limiter_key), '{}'),
         coalesce(array_agg(least(l.tat_ms, rate_now + w.window_ms)), '{}'), coalesce(array_agg(l.tat_ms > rate_now + w.window_ms), '{}')
  into rate_keys, rate_accounts, rate_envs, rate_limiters, rate_tats, rate_moved
  from locked l join w on w.account_id = l.account_id and w.environment = l.environment and w.limiter_key = l.limiter_key;
  end if;

  -- The batch's budget rows, locked by their upsert, which also gives their copy:
  -- judged and counted here, written back once per moved row after the loop.
  if jsonb_path_exists(batch, '$[*].budgets[*]') then
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
    returning b
  )
  select coalesce(array_agg((up.b).id), '{}'), coalesce(array_agg(up.b), '{}'),
         coalesce(array_agg(concat_ws(chr(31), (up.b).account_id, (up.b).environment, (up.b).policy_id, (up.b).scope, (up.b).agent_id,
                                      (up.b).session_id, (up.b).on_behalf_of, (up.b).unit, (up.b).period, (up.b).period_start::text)), '{}'),
         coalesce(array_agg(false), '{}')
  into usage_ids, brows, row_keys, changed
  from upserted up;
  end if;
  -- Holds whose decision has expired stop counting before anything is checked
  -- (authz_expire_hold_rows; their rows' held counted down on the copy, written back below).
  -- (A batch without budgets has none: no statement.)
  if coalesce(cardinality(usage_ids), 0) > 0 then
    select coalesce(array_agg(e.usage_id), '{}'), coalesce(array_agg(e.amount), '{}')
    into expired_ids, expired_amounts
    from authz_expire_hold_rows(usage_ids, now_ts) e;
  end if;
  for n in 1 .. coalesce(cardinality(expired_ids), 0) loop
    pos := array_position(usage_ids, expired_ids[n]);
    u := brows[pos];
    u.held := u.held - expired_amounts[n];
    brows[pos] := u;
    changed[pos] := true;
  end loop;

  -- The history scope keys of the whole batch, in one global order.
  for lock_key in
    select distinct hashtextextended(l, 0)
    from jsonb_array_elements(batch) q, jsonb_array_elements_text(coalesce(q->'history'->'locks', '[]')) l
    order by 1
  loop
    perform pg_advisory_xact_lock(lock_key);
  end loop;
  -- Their leases end (migration 026): their holders' memory no longer has all of their history.
  if jsonb_path_exists(batch, '$[*].history.locks[*]') then
    perform authz_history_revoke(array(
      select distinct l from jsonb_array_elements(batch) q, jsonb_array_elements_text(coalesce(q->'history'->'locks', '[]')) l));
  end if;

  for req, idx in select value, ordinality::int from jsonb_array_elements(batch) with ordinality loop
    -- Every limiter must pass, else none moves. (Each loop over a request's rates
    -- or budgets is a query: a request without them skips it.)
    has_rates := jsonb_typeof(req->'rates') = 'array' and jsonb_array_length(req->'rates') > 0;
    has_budgets := jsonb_typeof(req->'budgets') = 'array' and jsonb_array_length(req->'budgets') > 0;
    if has_rates then
      result := authz_rate_judge(req, rate_now, rate_keys, rate_tats);
      if result is not null then
        i := idx;
        return next;
        continue;
      end if;
      for x in select value from jsonb_array_elements(req->'rates') loop
        pos := array_position(rate_keys, concat_ws(chr(31), req->>'account_id', req->>'environment', x->>'key'));
        rate_tats[pos] := greatest(rate_tats[pos], rate_now) + (x->>'interval_ms')::float8;
        rate_moved[pos] := true;
      end loop;
    end if;

    -- The history this request was evaluated with must still give its outcome.
    hist := case when jsonb_typeof(req->'history') = 'object' then req->'history' end;
    hvalues := '[]';
    if hist is not null then
      stale := false;
      for x in select value from jsonb_array_elements(hist->'checks') loop
        hv := authz_history_value(req->>'account_id', req->>'environment', x, (hist->>'at_ms')::float8);
        hvalues := hvalues || to_jsonb(hv);
        if hv < (x->>'lo')::numeric or (x->>'hi' is not null and hv > (x->>'hi')::numeric) then
          stale := true;
        end if;
      end loop;
      if stale then
        i := idx;
        result := jsonb_build_object('outcome', 'history_stale', 'history', hvalues);
        return next;
        continue;
      end if;
    end if;

    -- Each budget's row, once (rows are locked: nothing else moves them meanwhile),
    -- judged on the batch's copy of it.
    denied := null;
    row_ix := '{}';
    applied := '[]';
    if has_budgets then
      for x in select value from jsonb_array_elements(req->'budgets') loop
        pos := array_position(row_keys, concat_ws(chr(31), req->>'account_id', req->>'environment', x->>'policy_id', x->>'scope',
          x->>'agent_id', x->>'session_id', x->>'on_behalf_of', x->>'unit', x->>'period', ((x->>'period_start')::timestamptz)::text));
        row_ix := row_ix || pos;
        u := brows[pos];
        cost := (x->>'cost')::numeric;
        if authz_budget_exceeds(u, cost) then
          denied := jsonb_build_object('budget', authz_usage_json(u), 'cost', cost);
          exit;
        end if;
      end loop;
      if denied is not null then
        if hist is not null then
          perform authz_history_record(req, 'denied');
        end if;
        i := idx;
        result := denied || jsonb_build_object('outcome', 'budget_exceeded', 'history', hvalues);
        return next;
        continue;
      end if;

      n := 0;
      for x in select value from jsonb_array_elements(req->'budgets') loop
        n := n + 1;
        cost := (x->>'cost')::numeric;
        u := authz_budget_take(brows[row_ix[n]], cost);
        if authz_budget_held(u.unit) then
          hold_decisions := hold_decisions || (req->>'decision_id');
          hold_rows := hold_rows || row_ix[n];
          hold_amounts := hold_amounts || cost;
          hold_expiries := hold_expiries || (req->>'expires_at')::timestamptz;
          hold_agents := hold_agents || (req->>'agent_id');
        end if;
        u := authz_budget_events(u, now_ts, req->>'agent_id');
        brows[row_ix[n]] := u;
        changed[row_ix[n]] := true;
        applied := applied || authz_usage_json(u);
      end loop;
    end if;
    if hist is not null then
      perform authz_history_record(req, null);
    end if;
    i := idx;
    result := jsonb_build_object('outcome', 'ok', 'budgets', applied, 'history', hvalues);
    return next;
  end loop;

  -- The limiters' states and the budget rows' counters: one update by primary key
  -- per moved row (never a join a planner could turn into a scan); every hold in one insert.
  for pos in 1 .. coalesce(cardinality(rate_moved), 0) loop
    if rate_moved[pos] then
      update rate_limits set tat_ms = rate_tats[pos]
      where account_id = rate_accounts[pos] and environment = rate_envs[pos] and limiter_key = rate_limiters[pos];
    end if;
  end loop;
  for pos in 1 .. coalesce(cardinality(changed), 0) loop
    if changed[pos] then
      update budget_usage set consumed = (brows[pos]).consumed, held = (brows[pos]).held where id = (brows[pos]).id;
    end if;
  end loop;
  if cardinality(hold_rows) > 0 then
    insert into budget_holds (account_id, environment, decision_id, policy_id, usage_id, amount, expires_at, status, agent_id)
    select (brows[h.ix]).account_id, (brows[h.ix]).environment, h.decision_id, (brows[h.ix]).policy_id, (brows[h.ix]).id,
           h.amount, h.expires_at, 'held', h.agent_id
    from unnest(hold_rows, hold_decisions, hold_amounts, hold_expiries, hold_agents) as h(ix, decision_id, amount, expires_at, agent_id);
  end if;
end $$;
