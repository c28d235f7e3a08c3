-- The value of one history probe for a request (docs/history.md): the number
-- (measures `count`, `denied`) or the sum of amounts (`sum`: confirmed_amount
-- once confirmed, else amount; none counts 0) of the environment's history
-- entries of the check's scope key whose evaluated_at is within the window
-- before `at_ms` (at_ms - window <= evaluated_at, as compiler/history/reference.ts
-- has it; no upper bound: an entry recorded before this read counts even when
-- its evaluated_at is a little later, another process's clock) and that the
-- check sees (authz_history_sees).
--
-- Check: {scope: session|agent|user|environment, key (the scope's value; null
-- for environment), actions: [pattern...], window_s, measure: count|sum|denied,
-- match: {field: value}}. Each scope reads through its own index of
-- history_entries (migration 021).
create or replace function authz_history_value(account text, env text, c jsonb, at_ms double precision)
returns numeric
language plpgsql stable as $$
declare
  since constant timestamptz := to_timestamp(at_ms / 1000.0) - make_interval(secs => (c->>'window_s')::float8);
  k constant text := c->>'key';
  total numeric;
begin
  case c->>'scope'
    when 'session' then
      select case when c->>'measure' = 'sum' then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.session_id = k and e.evaluated_at >= since
        and authz_history_sees(c, e.action, e.kind, e.match_values);
    when 'agent' then
      select case when c->>'measure' = 'sum' then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.agent_id = k and e.evaluated_at >= since
        and authz_history_sees(c, e.action, e.kind, e.match_values);
    when 'user' then
      select case when c->>'measure' = 'sum' then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.on_behalf_of = k and e.evaluated_at >= since
        and authz_history_sees(c, e.action, e.kind, e.match_values);
    else
      select case when c->>'measure' = 'sum' then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.evaluated_at >= since
        and authz_history_sees(c, e.action, e.kind, e.match_values);
  end case;
  return total;
end $$;
