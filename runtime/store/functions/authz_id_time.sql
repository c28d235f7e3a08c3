-- The time part of an id (8 base62 characters of `ms`): authz_new_id's, alone.
create or replace function authz_id_time(ms bigint) returns text language plpgsql immutable strict as $$
declare
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  n bigint := greatest(ms, 0);
  t text := '';
  i int;
begin
  for i in 1..8 loop
    t := substr(alphabet, (n % 62)::int + 1, 1) || t;
    n := n / 62;
  end loop;
  return t;
end $$;
