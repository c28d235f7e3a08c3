-- Decisions remember the run and the user they were made for (session_id,
-- on_behalf_of), the digest of the tool call's arguments their permit is bound
-- to (args_digest), and the API key that asked (key_id).
alter table decisions
  add column session_id text,
  add column on_behalf_of text,
  add column args_digest text,
  add column key_id text;

-- GET /v1/decisions?session_id= and ?on_behalf_of=: only rows that have one are indexed.
create index decisions_by_session on decisions (account_id, environment, session_id, seq) where session_id is not null;
create index decisions_by_user on decisions (account_id, environment, on_behalf_of, seq) where on_behalf_of is not null;

-- POST /v1/decisions/preview: what authz_apply_limits would answer for one
-- request now, reading only (no row is written or locked; no hold placed, no
-- event fired). Holds already expired are not counted. Same result shape:
-- {"outcome": "ok", "budgets": [usage...]} | {"outcome": "rate_limited", ...} |
-- {"outcome": "budget_exceeded", "budget": usage, "cost"}; a budget never used
-- this period reads as zero.
create function authz_preview_limits(req jsonb, now_ms double precision)
returns jsonb
language plpgsql stable as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  x jsonb;
  tat double precision;
  wait_ms double precision := 0;
  worst text;
  u budget_usage;
  expired numeric;
  cost numeric;
  usages jsonb := '[]';
begin
  for x in select value from jsonb_array_elements(req->'rates') loop
    select least(r.tat_ms, now_ms + (x->>'window_ms')::float8) into tat from rate_limits r
    where r.account_id = req->>'account_id' and r.environment = req->>'environment' and r.limiter_key = x->>'key';
    tat := coalesce(tat, 0);
    if greatest(tat, now_ms) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - now_ms > wait_ms then
      wait_ms := greatest(tat, now_ms) + (x->>'interval_ms')::float8 - (x->>'window_ms')::float8 - now_ms;
      worst := x->>'key';
    end if;
  end loop;
  if wait_ms > 0.001 then
    return jsonb_build_object('outcome', 'rate_limited', 'retry_after_ms', wait_ms, 'limiter', worst);
  end if;
  for x in select value from jsonb_array_elements(req->'budgets') loop
    select * into u from budget_usage b
    where b.account_id = req->>'account_id' and b.environment = req->>'environment' and b.policy_id = x->>'policy_id'
      and b.agent_id = req->>'agent_id' and b.unit = x->>'unit' and b.period = x->>'period'
      and b.period_start = (x->>'period_start')::timestamptz;
    if not found then
      u.account_id := req->>'account_id'; u.environment := req->>'environment'; u.policy_id := x->>'policy_id';
      u.agent_id := req->>'agent_id'; u.unit := x->>'unit'; u.period := x->>'period';
      u.period_start := (x->>'period_start')::timestamptz; u.period_end := (x->>'period_end')::timestamptz;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
      u.consumed := 0; u.held := 0;
    else
      select coalesce(sum(h.amount), 0) into expired from budget_holds h
      where h.usage_id = u.id and h.status = 'held' and h.expires_at <= now_ts;
      u.held := u.held - expired;
      u.limit_amount := (x->>'limit')::numeric; u.threshold_pct := (x->>'threshold')::float8;
    end if;
    cost := case when u.unit = 'calls' then 1 else coalesce((req->>'amount')::numeric, 0) end;
    if u.consumed + u.held + cost > u.limit_amount then
      return jsonb_build_object('outcome', 'budget_exceeded', 'budget', authz_usage_json(u), 'cost', cost);
    end if;
    -- As the decision would leave it: a call consumed, an amount held.
    if u.unit = 'calls' then u.consumed := u.consumed + 1; else u.held := u.held + cost; end if;
    usages := usages || authz_usage_json(u);
  end loop;
  return jsonb_build_object('outcome', 'ok', 'budgets', usages);
end $$;
