-- What the runtime learns of a usage row after a change.
--
-- PL/pgSQL, not SQL: the planner does not inline a SQL function over a row
-- argument here, and planned at every call it cost about 35 us per budget of
-- every budgeted decision (track_functions, bench/http's calls budget load).
create or replace function authz_usage_json(u budget_usage) returns jsonb language plpgsql immutable as $$
begin
  return jsonb_build_object(
    'policy_id', u.policy_id, 'scope', u.scope, 'agent_id', nullif(u.agent_id, ''),
    'session_id', nullif(u.session_id, ''), 'on_behalf_of', nullif(u.on_behalf_of, ''),
    'unit', u.unit, 'period', u.period,
    'period_end_ms', (extract(epoch from u.period_end) * 1000)::float8,
    'limit', u.limit_amount, 'threshold', u.threshold_pct, 'consumed', u.consumed, 'held', u.held,
    'past_threshold', u.threshold_pct is not null and u.consumed >= u.threshold_pct::numeric * u.limit_amount);
end $$;
