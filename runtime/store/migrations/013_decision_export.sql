-- GET /v1/decisions/export: every decision of an environment in a time range,
-- oldest first, read in keyset pages of (evaluated_at, seq).
create index decisions_by_time on decisions (account_id, environment, evaluated_at, seq);
