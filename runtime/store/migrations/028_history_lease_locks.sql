-- A leased write locks only the keys of the decisions that leave an entry or
-- name one in `after` (functions/authz_write_leased.sql, which the new
-- signature's `locked` argument comes with).
drop function if exists authz_write_leased(jsonb, jsonb, jsonb, jsonb, jsonb, text[], bigint[], jsonb);
