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
  n constant int := jsonb_array_length(batch);
  -- Each request's outcome, by its position in `batch`.
  results jsonb[] := array_fill(null::jsonb, array[greatest(n, 1)]);
  stale int[] := '{}';
  kept int[];
  written int[] := '{}';
  req jsonb;
  w jsonb;
  k int;
  held text[];
  current_labels text[];
  a record;
begin
  if jsonb_path_exists(batch, '$[*] ? (@.labels.type() == "object")') then
    for req, k in select b.v, b.o::int from jsonb_array_elements(batch) with ordinality as b(v, o) where jsonb_typeof(b.v->'labels') = 'object' loop
      held := array(select jsonb_array_elements_text(req->'labels'->'held'));
      current_labels := coalesce(authz_session_labels(req->>'account_id', req->>'environment', req->'labels'->>'session_id', now_ms,
        (req->'labels'->>'idle_s')::float8), '{}');
      if not (current_labels @> held and current_labels <@ held) then
        results[k] := jsonb_build_object('outcome', 'labels_stale', 'labels', to_jsonb(current_labels));
        stale := stale || k;
      end if;
    end loop;
  end if;
  if cardinality(stale) = 0 then
    for a in select * from authz_apply_limits(batch, now_ms, rate_offset_ms) loop
      results[a.i] := a.result;
    end loop;
  elsif cardinality(stale) < n then
    kept := array(select g from generate_series(1, n) g where g <> all (stale) order by g);
    for a in select * from authz_apply_limits((select jsonb_agg(batch->(g - 1) order by o) from unnest(kept) with ordinality u(g, o)), now_ms, rate_offset_ms) loop
      results[kept[a.i]] := a.result;
    end loop;
  end if;
  for k in 1 .. n loop
    w := writes->(k - 1);
    if jsonb_typeof(w) = 'object'
       and results[k]->>'outcome' = 'ok'
       and not jsonb_path_exists(results[k], '$.budgets[*] ? (@.past_threshold == true && @.consumed < @.limit)')
       and coalesce(results[k]->'history', '[]'::jsonb) = coalesce(w->'history', '[]'::jsonb) then
      written := written || k;
    end if;
  end loop;
  if cardinality(written) > 0 then
    perform authz_write_decisions(
      (select jsonb_agg(writes->(g - 1)->'decision' order by g) from unnest(written) g),
      (select jsonb_agg(writes->(g - 1)->'event' order by g) from unnest(written) g),
      '[]'::jsonb, '[]'::jsonb);
    perform set_config('synchronous_commit', 'on', true);
  end if;
  return query select g, results[g] || jsonb_build_object('written', g = any (written)) from generate_series(1, n) g;
end $$;
