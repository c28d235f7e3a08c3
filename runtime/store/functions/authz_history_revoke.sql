-- Ends the leases of these history scope keys (migration 026): each held one
-- gets a new epoch and no holder, so its holder's next write under the old
-- epoch fails (authz_write_leased) and the holder reads the key again before
-- deciding from memory. Called by every change to a key's history that its
-- holder does not make: the limits gate (authz_apply_limits, with the keys
-- locked) and the trigger on a changed entry (authz_history_changed).
-- enable_seqscan off: lookups by primary key, whatever the table's size was when
-- the connection planned them (authz_write_leased.sql says why).
create or replace function authz_history_revoke(keys text[])
returns void
language plpgsql
set enable_seqscan = off
as $$
begin
  if exists (select 1 from history_leases where lock_key = any (keys) and holder is not null) then
    update history_leases set holder = null, epoch = nextval('history_lease_epochs')
    where lock_key = any (keys) and holder is not null;
  end if;
end $$;
