-- GET /v1/decisions?effect=&reason= (with or without agent_id): newest first
-- within one effect or one reason, without scanning the whole environment.
--
-- Partial indexes: allow decisions and the reason policy.matched are the bulk
-- of a normal environment, so a filter on them finds its page quickly by
-- decisions_list, and the decision insert path (the hot path) maintains these
-- indexes only for denies, reviews and the deny reasons. The repository
-- (runtime/store/decisions.ts) repeats `effect <> 'allow'` /
-- `reason <> 'policy.matched'` in such queries so that the planner can use them.
-- An agent's filter keeps using decisions_by_agent (001).
create index decisions_by_effect on decisions (account_id, environment, effect, seq desc) where effect <> 'allow';
create index decisions_by_reason on decisions (account_id, environment, reason, seq desc) where reason <> 'policy.matched';
