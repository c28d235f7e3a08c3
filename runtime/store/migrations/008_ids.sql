-- One id format for every prefix (runtime/ids.ts): prefix, '_', 8 base62
-- characters of the time in ms, 16 random base62 characters, made by the store
-- itself with authz_new_id (runtime/store/functions/authz_new_id.sql), for budget
-- events and webhook deliveries. The old event id function goes (a fresh store,
-- whose 003 no longer makes it, has none).
drop function if exists authz_event_id();
