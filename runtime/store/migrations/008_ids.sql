-- One id format for every prefix (runtime/ids.ts): prefix, '_', 8 base62
-- characters of the time in ms, 16 random base62 characters. authz_new_id is
-- the SQL mirror of newId, for the ids the store makes itself: budget events
-- (authz_budget_events) and webhook deliveries (the fan-out trigger).
create function authz_new_id(prefix text, at timestamptz) returns text language plpgsql volatile as $$
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

-- Budget events made by the limits function: ids of the same format, at the service clock's time.
drop function authz_event_id();
create or replace function authz_budget_events(u budget_usage, now_ts timestamptz) returns budget_usage
language plpgsql as $$
declare
  fire_threshold boolean := u.threshold_pct is not null and u.threshold_fired_at is null
                            and u.consumed >= u.threshold_pct::numeric * u.limit_amount;
  fire_exceeded boolean := u.exceeded_fired_at is null and u.consumed >= u.limit_amount;
  data jsonb;
begin
  if not (fire_threshold or fire_exceeded) then
    return u;
  end if;
  data := jsonb_build_object(
    'agent_id', u.agent_id, 'policy_id', u.policy_id, 'budget_unit', u.unit,
    'budget_limit', u.limit_amount, 'budget_consumed', u.consumed, 'threshold_pct', u.threshold_pct,
    'period', u.period,
    'period_resets_at', to_char(u.period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
  if fire_threshold then
    insert into events (id, account_id, environment, type, created_at, data)
    values (authz_new_id('evt', now_ts), u.account_id, u.environment, 'budget.threshold', now_ts,
            data || '{"reason": "budget.below_threshold"}');
    u.threshold_fired_at := now_ts;
  end if;
  if fire_exceeded then
    insert into events (id, account_id, environment, type, created_at, data)
    values (authz_new_id('evt', now_ts), u.account_id, u.environment, 'budget.exceeded', now_ts,
            data || '{"reason": "budget.exceeded"}');
    u.exceeded_fired_at := now_ts;
    -- Every server process blocks the agent (runtime/limits/exhausted-agents.ts).
    perform pg_notify('authz_budgets', (authz_usage_json(u)
      || jsonb_build_object('account_id', u.account_id, 'environment', u.environment))::text);
  end if;
  update budget_usage set threshold_fired_at = u.threshold_fired_at, exceeded_fired_at = u.exceeded_fired_at
  where id = u.id;
  return u;
end $$;

create or replace function authz_fan_out_events() returns trigger language plpgsql as $$
begin
  insert into webhook_deliveries (id, account_id, environment, endpoint_id, event_id, status, next_attempt_at, created_at)
  select authz_new_id('whd', e.created_at), e.account_id, e.environment, w.id, e.id, 'pending',
         e.created_at, e.created_at
  from new_events e
  join webhook_endpoints w on w.account_id = e.account_id and w.environment = e.environment
  where w.status = 'enabled' and ('*' = any (w.events) or e.type = any (w.events))
  order by e.seq;
  return null;
end $$;
