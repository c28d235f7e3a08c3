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
  join rate_limits r on r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = x.value->>'key';
  return authz_rate_judge(req, rate_now, keys, tats);
end $$;
