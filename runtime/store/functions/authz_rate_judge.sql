-- The rate limits of one request at `rate_now` (authz_rate_now), judged on the
-- limiters' states given (`tats[k]` for the limiter named `keys[k]`: account_id,
-- environment and limiter key joined by chr(31)): null
-- when every limiter passes, else {"outcome": "rate_limited", "retry_after_ms",
-- "limiter"} naming the one that waits longest. authz_apply_limits asks it for
-- each request of a batch, on its own copy of the locked rows;
-- authz_rate_limited (authz_preview_limits) on the rows as stored.
--
-- GCRA: a limiter of N per window W has interval T = W/N; a request passes when
-- max(tat, now) + T - now <= W (a bucket of N, refilled at N per W). A row
-- further ahead than one full window (tat > now + W: the clock stepped back)
-- counts as now + W, as authz_apply_limits brings it back before judging; a
-- limiter without a row is empty (tat 0).
create or replace function authz_rate_judge(req jsonb, rate_now double precision, keys text[], tats double precision[])
returns jsonb
language plpgsql immutable as $$
declare
  x jsonb;
  pos int;
  tat double precision;
  wait_ms double precision := 0;
  worst text;
begin
  for x in select value from jsonb_array_elements(req->'rates') loop
    pos := array_position(keys, concat_ws(chr(31), req->>'account_id', req->>'environment', x->>'key'));
    tat := case when pos is null then 0 else least(tats[pos], rate_now + (x->>'window_ms')::float8) end;
    if greatest(tat, rate_now) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - rate_now > wait_ms then
      wait_ms := greatest(tat, rate_now) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - rate_now;
      worst := x->>'key';
    end if;
  end loop;
  -- A microsecond of slack absorbs float rounding of W/N.
  if wait_ms > 0.001 then
    return jsonb_build_object('outcome', 'rate_limited', 'retry_after_ms', wait_ms, 'limiter', worst);
  end if;
  return null;
end $$;
