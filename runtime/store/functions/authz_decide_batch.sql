-- A batch of decisions' limits and their decisions' writes in one statement
-- (docs/scale-out.md#what-one-decision-writes): authz_apply_limits judges and
-- changes the batch's rate limits, budgets and history; then each decision sent
-- with a write whose outcome needs nothing changed is stored in the same
-- transaction (authz_write_decisions), so a budgeted, history- or
-- label-reading decision costs one round trip to the store, not two.
--
-- Labels first: a request evaluated with the session labels this process
-- remembered carries `"labels": {"session_id", "held": [...], "idle_s"}`; when
-- the session's labels now (authz_session_labels; an ended session has none)
-- are another set, the request is answered {"outcome": "labels_stale",
-- "labels": [...]} and nothing of it moves (not even its rate limits): the
-- caller evaluates it again with them.
--
-- writes[k] goes with batch[k]: null, or {"decision": row, "event": its
-- decision.* event, "history": [the check values the row was built with]}.
-- It is stored when the request's outcome is "ok", no budget crossed its
-- warning threshold (the answer would gain a warning), and the gate's history
-- values are those the row carries; otherwise the caller writes the decision it
-- settles on (runtime/domain/decision-writer.ts). Each result gains
-- "written": true|false.
--
-- authz_apply_limits turns synchronous commit off for its transaction (a
-- limiter's move may be lost to a crash before a decision is stored); once a
-- decision is stored here the commit must wait for the disk, so it is turned
-- back on.
create or replace function authz_decide_batch(batch jsonb, writes jsonb, now_ms double precision, rate_offset_ms double precision default null)
returns table (i int, result jsonb)
language plpgsql as $$
declare
  req jsonb;
  n int;
  held text[];
  current_labels text[];
  -- The requests whose labels hold, and their positions in `batch`.
  kept jsonb := '[]';
  pos int[] := '{}';
  outcomes jsonb := '[]';
  chosen jsonb;
begin
  for req, n in select b.v, b.o::int from jsonb_array_elements(batch) with ordinality as b(v, o) loop
    if jsonb_typeof(req->'labels') = 'object' then
      held := array(select jsonb_array_elements_text(req->'labels'->'held'));
      current_labels := coalesce(authz_session_labels(req->>'account_id', req->>'environment', req->'labels'->>'session_id', now_ms,
        (req->'labels'->>'idle_s')::float8), '{}');
      if not (current_labels @> held and current_labels <@ held) then
        outcomes := outcomes || jsonb_build_array(jsonb_build_object('i', n, 'result',
          jsonb_build_object('outcome', 'labels_stale', 'labels', to_jsonb(current_labels))));
        continue;
      end if;
    end if;
    kept := kept || jsonb_build_array(req);
    pos := pos || n;
  end loop;
  if jsonb_array_length(kept) > 0 then
    select outcomes || coalesce(jsonb_agg(jsonb_build_object('i', pos[a.i], 'result', a.result)), '[]'::jsonb) into outcomes
    from authz_apply_limits(kept, now_ms, rate_offset_ms) a;
  end if;
  select coalesce(jsonb_agg(jsonb_build_object('n', w.n, 'v', w.v) order by w.n), '[]'::jsonb) into chosen
  from jsonb_array_elements(writes) with ordinality as w(v, n)
  join jsonb_array_elements(outcomes) o(v) on (o.v->>'i')::bigint = w.n
  where jsonb_typeof(w.v) = 'object'
    and o.v->'result'->>'outcome' = 'ok'
    and not exists (
      select 1 from jsonb_array_elements(coalesce(o.v->'result'->'budgets', '[]'::jsonb)) b
      where (b->>'past_threshold')::boolean and (b->>'consumed')::numeric < (b->>'limit')::numeric)
    and coalesce(o.v->'result'->'history', '[]'::jsonb) = coalesce(w.v->'history', '[]'::jsonb);
  if jsonb_array_length(chosen) > 0 then
    perform authz_write_decisions(
      (select jsonb_agg(c->'v'->'decision' order by (c->>'n')::bigint) from jsonb_array_elements(chosen) c),
      (select jsonb_agg(c->'v'->'event' order by (c->>'n')::bigint) from jsonb_array_elements(chosen) c),
      '[]'::jsonb, '[]'::jsonb);
    perform set_config('synchronous_commit', 'on', true);
  end if;
  return query
    select (o.v->>'i')::int, (o.v->'result') || jsonb_build_object('written',
      exists (select 1 from jsonb_array_elements(chosen) c where (c->>'n')::bigint = (o.v->>'i')::bigint))
    from jsonb_array_elements(outcomes) o(v);
end $$;
