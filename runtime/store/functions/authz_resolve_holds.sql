-- Confirm (each hold becomes consumption: p_amounts' amount for its unit, else
-- p_amount, else the held amount; never more than the hold: AZ001) or reject
-- (released) a decision's holds, in the caller's transaction, beside the
-- decision's own status change. p_amount alone on holds of two or more units is
-- refused (AZ002: which units). Returns the usage rows after the change.
create or replace function authz_resolve_holds(p_account text, p_environment text, p_decision text, p_confirm boolean,
                                    p_amount numeric, p_amounts jsonb, now_ms double precision)
returns setof jsonb
language plpgsql as $$
declare
  now_ts constant timestamptz := to_timestamp(now_ms / 1000.0);
  h budget_holds;
  u budget_usage;
  h_unit text;
  units text[];
  confirmed numeric;
begin
  select coalesce(array_agg(distinct b.unit order by b.unit), '{}') into units from budget_usage b
  where b.id in (select usage_id from budget_holds
                 where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held');
  -- amount alone is ambiguous over two units (amounts naming every unit makes it unused).
  if p_confirm and p_amount is not null and cardinality(units) > 1
     and exists (select 1 from unnest(units) x where p_amounts is null or not p_amounts ? x) then
    raise exception '%', array_to_string(units, ', ') using errcode = 'AZ002';
  end if;
  perform 1 from budget_usage b
  where b.id in (select usage_id from budget_holds
                 where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held')
  order by b.account_id, b.environment, b.policy_id, b.scope, b.agent_id, b.session_id, b.on_behalf_of, b.unit, b.period, b.period_start
  for update;
  for h in
    update budget_holds set status = case when p_confirm then 'confirmed' else 'released' end, resolved_at = now_ts
    where account_id = p_account and environment = p_environment and decision_id = p_decision and status = 'held'
    returning *
  loop
    select b.unit into h_unit from budget_usage b where b.id = h.usage_id;
    confirmed := case when p_confirm then coalesce((p_amounts->>h_unit)::numeric, p_amount, h.amount) else 0 end;
    if confirmed > h.amount then
      raise exception 'confirmed amount % exceeds the % held for decision %', confirmed, h.amount, p_decision
        using errcode = 'AZ001';
    end if;
    update budget_usage b
    set held = b.held - h.amount, consumed = b.consumed + confirmed
    where b.id = h.usage_id
    returning * into u;
    u := authz_budget_events(u, now_ts, h.agent_id);
    return next authz_usage_json(u);
  end loop;
end $$;
