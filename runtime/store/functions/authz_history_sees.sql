-- Whether a history entry is one a probe's check counts (authz_history_value),
-- scope and window aside: its action matches one of the check's action patterns
-- (the policies' grammar: `ns.verb`, `ns.*`, `*.verb`, `*`), its kind is the
-- one the measure reads ('denied' for `denied`, else 'counted'), and every MATCH
-- field the check carries has the same JSON value in the entry (a field the
-- entry lacks matches nothing).
--
-- PL/pgSQL, not SQL: it runs once per entry a probe reads, and a SQL function
-- that the planner does not inline is planned at every call (about 0.2 ms,
-- measured with track_functions on `bench/http/history.ts`); PL/pgSQL keeps
-- its plans and exits at the first test that fails.
create or replace function authz_history_sees(c jsonb, action text, kind text, match_values jsonb)
returns boolean
language plpgsql immutable as $$
declare
  p text;
  m record;
  seen boolean := false;
  wanted constant text := case when c->>'measure' = 'denied' then 'denied' else 'counted' end;
begin
  if kind <> wanted then
    return false;
  end if;
  for p in select jsonb_array_elements_text(c->'actions') loop
    if p = '*' or p = action
       or ((split_part(p, '.', 1) = '*' or split_part(p, '.', 1) = split_part(action, '.', 1))
           and (split_part(p, '.', 2) = '*' or split_part(p, '.', 2) = split_part(action, '.', 2))) then
      seen := true;
      exit;
    end if;
  end loop;
  if not seen then
    return false;
  end if;
  if jsonb_typeof(c->'match') = 'object' and c->'match' <> '{}'::jsonb then
    for m in select key, value from jsonb_each(c->'match') loop
      if match_values->m.key is distinct from m.value then
        return false;
      end if;
    end loop;
  end if;
  return true;
end $$;
