-- The value of one history probe for a request (docs/history.md): the number
-- (measures `count`, `denied`) or the sum of amounts (`sum`: confirmed_amount
-- once confirmed, else amount; none counts 0) of the environment's history
-- entries of the check's scope key whose evaluated_at is within the window
-- before `at_ms` (at_ms - window <= evaluated_at, as compiler/history/reference.ts
-- has it; no upper bound: an entry recorded before this read counts even when
-- its evaluated_at is a little later, another process's clock) and that the
-- check sees (authz_history_sees). An entry past its keep_until (kept no
-- longer than the longest window, or the log's retention, when it was recorded)
-- counts no more, pruned or not: the value does not depend on when the upkeep
-- ran, and a lease holder's memory (runtime/history/leases.ts) gives the same.
--
-- Check: {scope: session|agent|user|environment, key (the scope's value; null
-- for environment), actions: [pattern...], window_s, measure: count|sum|denied,
-- match: {field: value}}. The entries are the view history_entries (the gate's
-- rows and the leased decisions' columns, migration 029); a read names the
-- decisions' partitions of its window by log_id (a decision's id is made at its
-- evaluated_at; a minute's margin). Each scope reads through its own indexes
-- (migrations 024 and 029), which hold the entries its functions saw
-- (`scopes` bit) by scope key, action and time: a check over named actions
-- (no `*`, the common case) reads only those actions' entries within the
-- window, its tests written inline (kind, MATCH by containment when every
-- value is a string, number or boolean); a pattern reads the key's entries
-- and tests each with authz_history_sees.
--
-- plan_cache_mode force_generic_plan: a plan made for given values prunes the
-- decisions' partitions when it is made, so PostgreSQL judged it cheaper than
-- the generic one (which prunes them when it runs) and planned each query again
-- at every call (measured: about 40 us of PostgreSQL CPU per call, with the
-- decision log in four partitions).
create or replace function authz_history_value(account text, env text, c jsonb, at_ms double precision)
returns numeric
language plpgsql stable
set plan_cache_mode = force_generic_plan
as $$
declare
  at_ts constant timestamptz := to_timestamp(at_ms / 1000.0);
  since constant timestamptz := at_ts - make_interval(secs => (c->>'window_s')::float8);
  k constant text := c->>'key';
  summed constant boolean := c->>'measure' = 'sum';
  wanted constant text := case when c->>'measure' = 'denied' then 'denied' else 'counted' end;
  log_floor constant text := authz_id_floor('dec', since - interval '1 minute');
  m constant jsonb := case when jsonb_typeof(c->'match') = 'object' and c->'match' <> '{}'::jsonb then c->'match' end;
  plain_m boolean := true;
  exacts text[];
  total numeric;
begin
  -- One query for the actions (null when one is a pattern); the MATCH test is a simple expression.
  select case when bool_or(position('*' in p) > 0) then null else array_agg(p) end into exacts
  from jsonb_array_elements_text(c->'actions') p;
  if m is not null then
    plain_m := not jsonb_path_exists(m, 'strict $.* ? (@.type() == "object" || @.type() == "array" || @.type() == "null")');
  end if;
  if exacts is not null then
    case c->>'scope'
      when 'session' then
        select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
        from history_entries e
        where e.account_id = account and e.environment = env and e.session_id = k and (e.scopes & 1) <> 0
          and e.action = any (exacts) and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and e.kind = wanted
          and (m is null or (plain_m and e.match_values @> m) or (not plain_m and authz_history_sees(c, e.action, e.kind, e.match_values)));
      when 'agent' then
        select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
        from history_entries e
        where e.account_id = account and e.environment = env and e.agent_id = k and (e.scopes & 2) <> 0
          and e.action = any (exacts) and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and e.kind = wanted
          and (m is null or (plain_m and e.match_values @> m) or (not plain_m and authz_history_sees(c, e.action, e.kind, e.match_values)));
      when 'user' then
        select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
        from history_entries e
        where e.account_id = account and e.environment = env and e.on_behalf_of = k and (e.scopes & 4) <> 0
          and e.action = any (exacts) and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and e.kind = wanted
          and (m is null or (plain_m and e.match_values @> m) or (not plain_m and authz_history_sees(c, e.action, e.kind, e.match_values)));
      else
        select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
        from history_entries e
        where e.account_id = account and e.environment = env and (e.scopes & 8) <> 0
          and e.action = any (exacts) and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and e.kind = wanted
          and (m is null or (plain_m and e.match_values @> m) or (not plain_m and authz_history_sees(c, e.action, e.kind, e.match_values)));
    end case;
    return total;
  end if;
  case c->>'scope'
    when 'session' then
      select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.session_id = k and (e.scopes & 1) <> 0
        and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and authz_history_sees(c, e.action, e.kind, e.match_values);
    when 'agent' then
      select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.agent_id = k and (e.scopes & 2) <> 0
        and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and authz_history_sees(c, e.action, e.kind, e.match_values);
    when 'user' then
      select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and e.on_behalf_of = k and (e.scopes & 4) <> 0
        and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and authz_history_sees(c, e.action, e.kind, e.match_values);
    else
      select case when summed then coalesce(sum(coalesce(e.confirmed_amount, e.amount, 0)), 0) else count(*) end into total
      from history_entries e
      where e.account_id = account and e.environment = env and (e.scopes & 8) <> 0
        and e.log_id >= log_floor and e.evaluated_at >= since and e.keep_until >= at_ts and authz_history_sees(c, e.action, e.kind, e.match_values);
  end case;
  return total;
end $$;
