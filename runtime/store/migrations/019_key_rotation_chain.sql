-- The rotation chain of API keys: a key made by rolling another
-- (POST /admin/api-keys/:id/rotate) names the key it replaces. A review by any
-- key of the deciding key's chain (predecessors and successors, transitively)
-- is self-review. Keys rolled before this migration carry no link.
alter table api_keys add column replaces text references api_keys (id);
create index api_keys_replaces on api_keys (replaces) where replaces is not null;
