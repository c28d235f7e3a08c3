-- POST /v1/decisions/preview and GET /v1/budgets/remaining: what
-- authz_apply_limits would answer for one request now, reading only (no row is
-- written or locked; no hold placed, no event fired). Holds already expired are
-- not counted (authz_hold_expired); a budget never used this period reads as
-- zero. Budgets keyed and costed as in authz_apply_limits, judged and counted by
-- the same rules (authz_budget_exceeds, authz_budget_take); same result shape.
create or replace function authz_preview_limits(req jsonb, now_ms double precision, rate_offset_ms double precision default null)
returns jsonb
language plpgsql stable as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  rate_now constant double precision := authz_rate_now(now_ms, rate_offset_ms);
  limited jsonb;
  x jsonb;
  u budget_usage;
  expired numeric;
  cost numeric;
  usages jsonb := '[]';
begin
  limited := authz_rate_limited(req, rate_now);
  if limited is not null then
    return limited;
  end if;
  for x in select value from jsonb_array_elements(req->'budgets') loop
    select * into u from budget_usage b
    where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
      and b.scope = x->>'scope' and b.agent_id = x->>'agent_id' and b.session_id = x->>'session_id'
      and b.on_behalf_of = x->>'on_behalf_of' and b.unit = x->>'unit' and b.period = x->>'period'
      and b.period_start = (x->>'period_start')::timestamptz;
    if not found then
      u.account_id := req->>'account_id'; u.environment := req->>'environment'; u.policy_id := x->>'policy_id';
      u.scope := x->>'scope'; u.agent_id := x->>'agent_id'; u.session_id := x->>'session_id';
      u.on_behalf_of := x->>'on_behalf_of'; u.unit := x->>'unit'; u.period := x->>'period';
      u.period_start := (x->>'period_start')::timestamptz; u.period_end := (x->>'period_end')::timestamptz;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
      u.consumed := 0; u.held := 0;
    else
      select coalesce(sum(h.amount), 0) into expired from budget_holds h
      where h.usage_id = u.id and authz_hold_expired(h.status, h.expires_at, now_ts);
      u.held := u.held - expired;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
    end if;
    cost := coalesce((x->>'cost')::numeric, 0);
    if authz_budget_exceeds(u, cost) then
      return jsonb_build_object('outcome', 'budget_exceeded', 'budget', authz_usage_json(u), 'cost', cost);
    end if;
    -- As the decision would leave it: a call consumed, an amount held.
    usages := usages || authz_usage_json(authz_budget_take(u, cost));
  end loop;
  return jsonb_build_object('outcome', 'ok', 'budgets', usages);
end $$;
