-- The clock rate limiters are judged on (authz_apply_limits, authz_preview_limits).
-- `rate_offset_ms` given (the service clock follows real time, with this offset:
-- 0, or the test clock's): the database's clock plus the offset, so server
-- processes whose clocks disagree judge the shared rows alike. Null (a clock
-- that does not follow real time: tests' manual clocks): `now_ms`.
create or replace function authz_rate_now(now_ms double precision, rate_offset_ms double precision) returns double precision
language sql volatile as $$
  select case when rate_offset_ms is null then now_ms else extract(epoch from clock_timestamp()) * 1000 + rate_offset_ms end
$$;
