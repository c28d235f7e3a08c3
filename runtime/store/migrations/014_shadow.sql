-- Shadow policies: a decision whose outcome with the shadow policies enabled
-- differs keeps that outcome ({effect, reason, policy_id}); the diverged ones
-- are listed with GET /v1/decisions?shadow_diverged=true.
alter table decisions add column shadow jsonb;
create index decisions_shadow_diverged on decisions (account_id, environment, seq desc) where shadow is not null;
