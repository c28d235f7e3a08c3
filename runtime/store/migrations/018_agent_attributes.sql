-- Agent attributes (issue 32): what PUT /v1/agents/:agent_id stores about an
-- agent (roles, team, email, ...), read by policy conditions as
-- `agent.attributes.…`. At most 8,192 bytes of JSON, checked by the route.
-- An agent registered by its first decision has none: '{}'.
alter table agents add column attributes jsonb not null default '{}'::jsonb;
