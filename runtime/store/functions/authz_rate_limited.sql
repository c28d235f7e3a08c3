-- The rate limits of one request at `rate_now` (authz_rate_now), read only, on
-- the limiters' rows as stored: authz_rate_judge (the arithmetic, GCRA) on them.
-- authz_preview_limits asks it for its one request.
create or replace function authz_rate_limited(req jsonb, rate_now double precision) returns jsonb
language plpgsql stable as $$
declare
  keys text[];
  tats double precision[];
begin
  select coalesce(array_agg(concat_ws(chr(31), r.account_id, r.environment, r.limiter_key)), '{}'),
         coalesce(array_agg(r.tat_ms), '{}')
  into keys, tats
  from jsonb_array_elements(req->'rates') x
  -- By primary key, one limiter at a time (limit 1 keeps it a lookup, never a scan); a limiter without a row has none.
  cross join lateral (select rl.account_id, rl.environment, rl.limiter_key, rl.tat_ms from rate_limits rl
                      where rl.account_id = req->>'account_id' and rl.environment = req->>'environment' and rl.limiter_key = x.value->>'key'
                      limit 1) r;
  return authz_rate_judge(req, rate_now, keys, tats);
end $$;
