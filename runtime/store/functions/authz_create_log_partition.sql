-- Creates `parent`'s partition of the UTC day `day` (named parent_pYYYYMMDD)
-- unless it exists; false when it did. Rows of its range sitting in the default
-- partition are moved into it first. The table is made standalone and then
-- attached (ATTACH takes SHARE UPDATE EXCLUSIVE on the parent: inserts go on).
-- webhook_deliveries brings webhook_attempts' partition of the same day along:
-- moving a delivery (delete, insert) cascades to its attempts, which are kept
-- aside and put back.
create or replace function authz_create_log_partition(parent text, day date) returns boolean language plpgsql as $$
declare
  k record := authz_log_key(parent);
  name text := parent || '_p' || to_char(day, 'YYYYMMDD');
  lo text := authz_id_floor(k.prefix, day::timestamp at time zone 'UTC');
  hi text := authz_id_floor(k.prefix, (day + 1)::timestamp at time zone 'UTC');
begin
  if parent not in ('decisions', 'events', 'webhook_deliveries') then
    raise exception 'authz_create_log_partition: % is not a log table with partitions of its own', parent;
  end if;
  if to_regclass(name) is not null then
    return false;
  end if;
  if parent = 'webhook_deliveries' then
    create temp table authz_kept_attempts on commit drop as
      select * from webhook_attempts where delivery_id >= lo and delivery_id < hi;
  end if;
  execute format('create table %I (like %I including defaults including constraints)', name, parent);
  execute format('with moved as (delete from %I where %I >= $1 and %I < $2 returning *) insert into %I select * from moved',
                 parent || '_default', k.key, k.key, name) using lo, hi;
  execute format('alter table %I attach partition %I for values from (%L) to (%L)', parent, name, lo, hi);
  if parent = 'webhook_deliveries' then
    name := 'webhook_attempts_p' || to_char(day, 'YYYYMMDD');
    execute format('create table %I (like webhook_attempts including defaults including constraints)', name);
    delete from webhook_attempts_default where delivery_id >= lo and delivery_id < hi;
    execute format('insert into %I select * from authz_kept_attempts', name);
    drop table authz_kept_attempts;
    execute format('alter table webhook_attempts attach partition %I for values from (%L) to (%L)', name, lo, hi);
  end if;
  return true;
end $$;
