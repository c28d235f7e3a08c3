-- Whether a history entry is one a probe's check counts (authz_history_value),
-- scope and window aside: its action matches one of the check's action patterns
-- (the policies' grammar: `ns.verb`, `ns.*`, `*.verb`, `*`), its kind is the
-- one the measure reads ('denied' for `denied`, else 'counted'), and every MATCH
-- field the check carries has the same JSON value in the entry (a field the
-- entry lacks matches nothing).
create or replace function authz_history_sees(c jsonb, action text, kind text, match_values jsonb)
returns boolean
language sql immutable as $$
  select kind = case when c->>'measure' = 'denied' then 'denied' else 'counted' end
    and exists (select 1 from jsonb_array_elements_text(c->'actions') p
                where p = '*' or p = action
                   or ((split_part(p, '.', 1) = '*' or split_part(p, '.', 1) = split_part(action, '.', 1))
                       and (split_part(p, '.', 2) = '*' or split_part(p, '.', 2) = split_part(action, '.', 2))))
    and not exists (select 1 from jsonb_each(c->'match') m where match_values->m.key is distinct from m.value)
$$;
