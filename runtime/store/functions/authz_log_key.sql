-- The id prefix and the key column of each partitioned table of the log.
create or replace function authz_log_key(parent text, out prefix text, out key text) language sql immutable strict as $$
  select case parent when 'decisions' then 'dec' when 'events' then 'evt' else 'whd' end,
         case parent when 'webhook_attempts' then 'delivery_id' else 'id' end
$$;
