-- Fires budget.threshold and budget.exceeded for a usage row just changed, each
-- at most once per row (= per period), and announces an exhausted budget to
-- every server process. `acting_agent`: the agent whose decision (or confirm)
-- changed the row, named as the event's agent_id for a user budget. Returns the
-- row with its flags set.
create or replace function authz_budget_events(u budget_usage, now_ts timestamptz, acting_agent text) returns budget_usage
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
    'agent_id', case when u.scope = 'user' then acting_agent else u.agent_id end,
    'policy_id', u.policy_id, 'budget_unit', u.unit,
    'budget_limit', u.limit_amount, 'budget_consumed', u.consumed, 'threshold_pct', u.threshold_pct,
    'period', u.period,
    'period_resets_at', to_char(u.period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'scope', u.scope);
  if u.scope = 'session' then data := data || jsonb_build_object('session_id', u.session_id); end if;
  if u.scope = 'user' then data := data || jsonb_build_object('on_behalf_of', u.on_behalf_of); end if;
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
    -- Every server process blocks the agent, session or user (runtime/spend-limits/exhausted-agents.ts).
    perform pg_notify('authz_budgets', (authz_usage_json(u)
      || jsonb_build_object('account_id', u.account_id, 'environment', u.environment))::text);
  end if;
  update budget_usage set threshold_fired_at = u.threshold_fired_at, exceeded_fired_at = u.exceeded_fired_at
  where id = u.id;
  return u;
end $$;
