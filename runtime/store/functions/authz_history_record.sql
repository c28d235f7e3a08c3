-- Records a request's history entry (docs/history.md), if it carries one
-- (req->'history'->'record': {agent_id, session_id, on_behalf_of, action, kind,
-- amount, match_values, evaluated_at_ms, keep_until_ms, scopes, counted_only}); `kind`, when given,
-- overrides the entry's (a budget denied the request: 'denied'); a denied entry
-- with `counted_only` (no history.denied function sees it) is not kept. `scopes`: the
-- bits of the scopes whose functions see it (migration 024; absent: all four).
-- One entry per decision: a decision recorded again is left as it was. Called
-- by authz_apply_limits with the request's scope keys locked. (A decision
-- decided from leases carries its entry in its own row: migration 029.)
--
-- PL/pgSQL, not SQL: called once per recorded decision, and a SQL function
-- called from PL/pgSQL is planned at every call; PL/pgSQL keeps the plan.
create or replace function authz_history_record(req jsonb, kind text)
returns void
language plpgsql as $$
declare
  r constant jsonb := req->'history'->'record';
begin
  if jsonb_typeof(r) <> 'object' or r is null then
    return;
  end if;
  -- A denied decision's entry that no history.denied function sees is not kept (nothing reads it).
  if coalesce(kind, r->>'kind') = 'denied' and coalesce((r->>'counted_only')::boolean, false) then
    return;
  end if;
  insert into history_gate_entries (account_id, environment, decision_id, agent_id, session_id, on_behalf_of, action, kind,
                               amount, match_values, evaluated_at, keep_until, scopes)
  values (req->>'account_id', req->>'environment', req->>'decision_id', r->>'agent_id', r->>'session_id', r->>'on_behalf_of',
          r->>'action', coalesce(kind, r->>'kind'), (r->>'amount')::numeric, coalesce(r->'match_values', '{}'),
          to_timestamp((r->>'evaluated_at_ms')::float8 / 1000.0), to_timestamp((r->>'keep_until_ms')::float8 / 1000.0),
          coalesce((r->>'scopes')::smallint, 15))
  on conflict do nothing;
end $$;
