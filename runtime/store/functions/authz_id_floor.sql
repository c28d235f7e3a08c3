-- The smallest id of `prefix` made at or after `at` (every id made before it sorts below).
create or replace function authz_id_floor(prefix text, at timestamptz) returns text language sql immutable strict as $$
  select prefix || '_' || authz_id_time(floor(extract(epoch from at) * 1000)::bigint)
$$;
