-- History leases (docs/history.md#leases): a server process that holds the lease
-- of a history scope key (`<account>\x1f<environment>\x1f<scope>\x1f<value>`, the
-- key the limits gate locks) decides that key's history from memory, and writes
-- each decision's entry with the decision row (authz_write_leased), not through
-- the limits gate.
--
-- A lease is a row: its holder (a process's instance id) and an epoch, unique
-- across leases (from history_lease_epochs, so a row deleted and made again never
-- repeats one). Whatever changes the history of a leased key other than its
-- holder moves the epoch and clears the holder, in the same transaction as the
-- change: a decision through the limits gate (authz_apply_limits), a confirmed
-- amount or a review's denial (the trigger below). The holder's write carries the
-- epoch it took the lease with, checked under a shared advisory lock on the key
-- (the gate and a new holder take it exclusively): a write whose epoch is no
-- longer the row's fails, and its decisions are decided again through the gate.
-- So the memory a holder decides from is the store's history of that key, or
-- nothing it decided is written.
--
-- renewed_at: when the holder last said it still holds it (a process that died
-- leaves rows the upkeep deletes after a while; a holder that comes back finds
-- its epoch gone and takes the lease again).
create sequence history_lease_epochs;

create table history_leases (
  lock_key    text primary key,
  holder      text,
  epoch       bigint not null,
  renewed_at  timestamptz not null
);

-- An entry counted or summed differently from now on (its confirmed amount, a
-- review's denial): the leases of its scope keys end.
\ir ../functions/authz_history_changed.sql
create trigger history_entries_changed after update of kind, confirmed_amount on history_entries
  for each row when (old.kind is distinct from new.kind or old.confirmed_amount is distinct from new.confirmed_amount)
  execute function authz_history_changed();
