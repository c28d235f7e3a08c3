-- The one statement that stores decisions (runtime/store/decisions.ts
-- writeDecisionBatch, the decision writer's group commit; authz_decide_batch,
-- a decision written with its limits): the agents seen for the first time and
-- their agent.registered events, the decisions, and their decision.* events.
-- Returns "account:environment:agent" of each agent this call registered (the
-- others were known already).
--
-- A decision.allow / decision.deny event is derived from its decision (issue 51,
-- migration 025): its id is 'evt_' || the decision id's suffix, its time the
-- decision's, its body built when read (runtime/events/references.ts), and
-- GET /v1/events lists it from the decisions table (runtime/store/events.ts). It
-- has an `events` row only when an enabled endpoint of its account and
-- environment subscribes to its type: that row (no body, `decision_id` set) is
-- what the deliveries name, and the fan-out trigger (authz_fan_out_events) makes
-- them in this same statement. A review decision's event (decision.review) keeps
-- its body by value, as passed in `decision_events` (a verdict changes the
-- decision); by-reference rows passed there (a caller of before migration 025)
-- are left out: the decisions give them.
--
-- decisions: [DecisionRow as JSON, with h_scopes, h_denied, h_match, h_keep_s
-- when it carries its history entry (authz_write_leased, migration 029)];
-- decision_events, agent_events: [event row];
-- agents: [{account_id, environment, agent_id, first_seen_at}].
create or replace function authz_write_decisions(decisions jsonb, decision_events jsonb, agents jsonb, agent_events jsonb)
returns setof text
language plpgsql as $$
begin
  return query
    with new_agents as (
      insert into agents (account_id, environment, agent_id, status, first_seen_at)
      select x.account_id, x.environment, x.agent_id, 'active', x.first_seen_at
      from jsonb_to_recordset(agents)
        as x(account_id text, environment text, agent_id text, first_seen_at timestamptz)
      -- One lock order for every batch: batches written at once that register the
      -- same new agents would otherwise deadlock on each other's uncommitted rows.
      order by x.account_id, x.environment, x.agent_id
      on conflict do nothing
      returning agents.account_id, agents.environment, agents.agent_id
    ), agent_rows as (
      insert into events (id, account_id, environment, type, created_at, data)
      select e.v->>'id', e.v->>'account_id', e.v->>'environment', e.v->>'type', (e.v->>'created_at')::timestamptz, e.v->'data'
      from jsonb_array_elements(agent_events) with ordinality as e(v, ord)
      join new_agents n on n.account_id = e.v->>'account_id' and n.environment = e.v->>'environment'
        and n.agent_id = e.v->'data'->>'agent_id'
      order by e.ord
      returning 1
    ), new_decisions as (
      insert into decisions (account_id, environment, id, agent_id, action, resource, amount, context, effect, reason,
        policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds, permit_token,
        session_id, on_behalf_of, args_digest, key_id, shadow, review_status, approval_expires_at, session_labels, history,
        h_scopes, h_denied, h_match, h_keep_s)
      select x.account_id, x.environment, x.id, x.agent_id, x.action, x.resource, x.amount, x.context, x.effect, x.reason,
        x.policy_id, x.matched_policy_ids, x.warnings, x.status, x.evaluated_at, x.expires_at, x.ttl_seconds, null,
        x.session_id, x.on_behalf_of, x.args_digest, x.key_id, x.shadow, x.review_status, x.approval_expires_at, x.session_labels, x.history,
        x.h_scopes, x.h_denied, x.h_match, x.h_keep_s
      from jsonb_to_recordset(decisions)
        as x(account_id text, environment text, id text, agent_id text, action text, resource text, amount float8,
             context jsonb, effect text, reason text, policy_id text, matched_policy_ids text[], warnings jsonb,
             status text, evaluated_at timestamptz, expires_at timestamptz, ttl_seconds int,
             session_id text, on_behalf_of text, args_digest text, key_id text, shadow jsonb,
             review_status text, approval_expires_at timestamptz, session_labels text[], history jsonb,
             h_scopes smallint, h_denied boolean, h_match jsonb, h_keep_s float8)
      returning decisions.account_id, decisions.environment, decisions.id, decisions.effect, decisions.evaluated_at,
        decisions.review_status
    ), decision_rows as (
      insert into events (id, account_id, environment, type, created_at, data, decision_id)
      select e.id, e.account_id, e.environment, e.type, e.created_at, e.data, e.decision_id
      from (
        select e.v->>'id' as id, e.v->>'account_id' as account_id, e.v->>'environment' as environment,
          e.v->>'type' as type, (e.v->>'created_at')::timestamptz as created_at, e.v->'data' as data,
          null::text as decision_id
        from jsonb_array_elements(coalesce(decision_events, '[]'::jsonb)) as e(v)
        where jsonb_typeof(e.v) = 'object' and jsonb_typeof(e.v->'data') = 'object'
        union all
        -- Derived decision events that an enabled endpoint subscribes to: their deliveries need an event row.
        select 'evt_' || substr(x.id, 5), x.account_id, x.environment, 'decision.' || x.effect, x.evaluated_at, null, x.id
        from new_decisions x
        where x.review_status is null and exists (
          select 1 from webhook_endpoints w
          where w.account_id = x.account_id and w.environment = x.environment and w.status = 'enabled'
            and ('*' = any (w.events) or 'decision.' || x.effect = any (w.events)))
      ) e
      order by e.id
      returning 1
    )
    -- Data-modifying CTEs run to completion whether or not they are read.
    select n.account_id || ':' || n.environment || ':' || n.agent_id from new_agents n;
end $$;
