/**
 * Bundle pushes in short statements (migrations/011_clock_and_bundles.sql): the
 * new set is written under a generation of its own while the active one serves,
 * its events are staged, one short transaction makes it active, then the events
 * move into `events` and the replaced rows go, a chunk at a time. Every function
 * here is one statement (commitPush: a few, in the caller's transaction), so no
 * call holds the store for long, whatever the push's size.
 */
import type { Environment, Tenant } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import type { EventRow } from './events.js';
import type { PolicyDocument } from './policies.js';

export interface BundlePush {
  generation: number;
  account_id: string;
  environment: Environment;
  state: 'staging' | 'committed';
  /** Set once committed: the generation whose rows are to be deleted. */
  replaced_generation: number | null;
}

/** Opens a push of the tenant's set: returns its generation. */
export async function beginPush(sql: SqlOrTx, tenant: Tenant): Promise<number> {
  const [row] = await sql<Array<{ generation: number }>>`
    insert into bundle_pushes (generation, account_id, environment, state)
    values (nextval('policy_generations'), ${tenant.accountId}, ${tenant.environment}, 'staging')
    returning generation`;
  return row!.generation;
}

/**
 * Writes some of the push's policies (in order: their `seq` follows the bundle's
 * order), invisible until committed; nothing once the push was taken (claimStagingPush).
 */
export async function stagePolicies(
  sql: SqlOrTx,
  tenant: Tenant,
  generation: number,
  policies: readonly PolicyDocument[],
  at: Date,
): Promise<void> {
  await sql`
    insert into policies (account_id, environment, generation, id, body, created_at, updated_at)
    select ${tenant.accountId}, ${tenant.environment}, ${generation}, x.id, x.body::jsonb, ${at}, ${at}
    from unnest(${policies.map((p) => p.id)}::text[], ${policies.map((p) => JSON.stringify(p))}::text[]) with ordinality as x(id, body, n)
    where exists (select 1 from bundle_pushes where generation = ${generation} and state = 'staging')
    order by x.n`;
}

/** Stages some of the push's events, numbered from `firstOrd`; nothing once the push was taken. */
export async function stageEvents(
  sql: SqlOrTx,
  generation: number,
  firstOrd: number,
  events: readonly EventRow[],
): Promise<void> {
  await sql`
    insert into bundle_push_events (generation, ord, id, type, created_at, data)
    select ${generation}, ${firstOrd}::int + x.n::int - 1, x.id, x.type, x.created_at, x.data::jsonb
    from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.type)}::text[],
                ${events.map((e) => e.created_at.toISOString())}::timestamptz[], ${events.map((e) => JSON.stringify(e.data))}::text[])
         with ordinality as x(id, type, created_at, data, n)
    where exists (select 1 from bundle_pushes where generation = ${generation} and state = 'staging')`;
}

/** Deletes up to `limit` of the push's staged events (a push that must diff again); how many went. */
export async function unstageEvents(sql: SqlOrTx, generation: number, limit: number): Promise<number> {
  const result = await sql`
    delete from bundle_push_events where generation = ${generation}
      and ord in (select ord from bundle_push_events where generation = ${generation} order by ord limit ${limit})`;
  return result.count;
}

/**
 * In the caller's transaction, with the set locked (lockPolicySet): makes the
 * push's generation the active one, replacing `replaced`, at `version`. False
 * (nothing changed) when the push is no longer staging (undone by `recover`
 * after a stall: its rows may be gone).
 */
export async function commitPush(
  tx: SqlOrTx,
  tenant: Tenant,
  generation: number,
  replaced: number,
  version: number,
  hash: string,
  at: Date,
): Promise<boolean> {
  const marked = await tx`update bundle_pushes set state = 'committed', replaced_generation = ${replaced}
                          where generation = ${generation} and state = 'staging'`;
  if (marked.count === 0) return false;
  await tx`update policy_sets set generation = ${generation}, version = ${version}, hash = ${hash}, updated_at = ${at}
           where account_id = ${tenant.accountId} and environment = ${tenant.environment}`;
  return true;
}

/**
 * Moves up to `limit` of a committed push's events into `events`, in order; how
 * many moved. Safe beside another process moving the same push's events (each
 * event moves once).
 */
export async function moveEvents(sql: SqlOrTx, tenant: Tenant, generation: number, limit: number): Promise<number> {
  const result = await sql`
    with moved as (
      delete from bundle_push_events e
      where e.generation = ${generation}
        and e.ord in (select ord from bundle_push_events where generation = ${generation} order by ord limit ${limit})
      returning e.ord, e.id, e.type, e.created_at, e.data
    )
    insert into events (id, account_id, environment, type, created_at, data)
    select m.id, ${tenant.accountId}, ${tenant.environment}, m.type, m.created_at, m.data from moved m
    order by m.ord`;
  return result.count;
}

/** Deletes up to `limit` rows of one generation of the tenant's policies (replaced, or of an abandoned push); how many went. */
export async function deleteGeneration(
  sql: SqlOrTx,
  tenant: Tenant,
  generation: number,
  limit: number,
): Promise<number> {
  const result = await sql`
    delete from policies where account_id = ${tenant.accountId} and environment = ${tenant.environment} and generation = ${generation}
      and id in (select id from policies
                 where account_id = ${tenant.accountId} and environment = ${tenant.environment} and generation = ${generation} limit ${limit})`;
  return result.count;
}

/** The committed push is done: forgets it. */
export async function endPush(sql: SqlOrTx, generation: number): Promise<void> {
  await sql`delete from bundle_pushes where generation = ${generation}`;
}

/**
 * Takes a push that never committed away from whoever staged it, so that it can
 * be undone: true when it was still staging (it can no longer commit, and its
 * rows and events are the caller's to delete); false when it committed (or was
 * taken already).
 */
export async function claimStagingPush(sql: SqlOrTx, generation: number): Promise<boolean> {
  const result = await sql`delete from bundle_pushes where generation = ${generation} and state = 'staging'`;
  return result.count > 0;
}

/** Pushes to finish (committed) or undo (staging for longer than `staleSeconds`, by the database's clock). */
export function unfinishedPushes(sql: SqlOrTx, staleSeconds: number): Promise<BundlePush[]> {
  return sql<BundlePush[]>`
    select generation, account_id, environment, state, replaced_generation from bundle_pushes
    where state = 'committed' or started_at < now() - ${staleSeconds}::int * interval '1 second'
    order by generation`;
}
