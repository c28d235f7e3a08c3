-- One id format for every prefix (runtime/ids.ts): prefix, '_', 8 base62
-- characters of the time in ms, 16 random base62 characters. authz_new_id is
-- the SQL mirror of newId, for the ids the store makes itself: budget events
-- (authz_budget_events) and webhook deliveries (the fan-out trigger).
create or replace function authz_new_id(prefix text, at timestamptz) returns text language plpgsql volatile as $$
declare
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  ms bigint := floor(extract(epoch from at) * 1000)::bigint;
  t text := '';
  r text := '';
  bytes bytea;
  b int;
  i int;
begin
  for i in 1..8 loop
    t := substr(alphabet, (ms % 62)::int + 1, 1) || t;
    ms := ms / 62;
  end loop;
  while length(r) < 16 loop
    -- Bytes 6 and 8 of a v4 UUID carry its version and variant bits: skipped.
    bytes := uuid_send(gen_random_uuid());
    for i in 0..15 loop
      continue when i = 6 or i = 8;
      b := get_byte(bytes, i);
      if b < 248 and length(r) < 16 then
        r := r || substr(alphabet, (b % 62) + 1, 1);
      end if;
    end loop;
  end loop;
  return prefix || '_' || t || r;
end $$;
