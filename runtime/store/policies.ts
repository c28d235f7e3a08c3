/**
 * Policies of an environment and the version of the set they form. An
 * environment's rows are those of its active generation (policy_sets.generation):
 * a bundle push writes the next set under a generation of its own and makes it
 * active at once (store/bundle-pushes.ts). Everything here reads and writes the
 * active generation.
 */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

/** The environment's active generation, as a subquery. */
const active = (sql: SqlOrTx, accountId: string, environment: Environment) =>
  sql`(select generation from policy_sets where account_id = ${accountId} and environment = ${environment})`;

/** What the store knows of a policy: a JSON document with an id (the compiler's Policy, to the domain). */
export interface PolicyDocument {
  id: string;
}

export interface PolicyRecord<P extends PolicyDocument = PolicyDocument> {
  policy: P;
  created_at: Date;
  updated_at: Date;
}

export interface PolicySetVersion {
  version: number;
  hash: string | null;
  /** Whose rows are the set's. */
  generation: number;
}

/** Locks the environment's set for a change (until the transaction ends) and returns its version. */
export async function lockPolicySet(
  tx: SqlOrTx,
  accountId: string,
  environment: Environment,
): Promise<PolicySetVersion> {
  const [row] = await tx<PolicySetVersion[]>`
    select version::int as version, hash, generation from policy_sets
    where account_id = ${accountId} and environment = ${environment} for update`;
  if (!row) throw new Error(`no policy set for ${accountId}/${environment}`);
  return row;
}

export async function readPolicySetVersion(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
): Promise<PolicySetVersion | undefined> {
  const [row] = await sql<PolicySetVersion[]>`
    select version::int as version, hash, generation from policy_sets where account_id = ${accountId} and environment = ${environment}`;
  return row;
}

/** Every environment's version (replicas compare these with what they have compiled). */
export async function allPolicySetVersions(
  sql: SqlOrTx,
): Promise<Array<{ account_id: string; environment: Environment; version: number }>> {
  return sql`select account_id, environment, version::int as version from policy_sets`;
}

export async function bumpPolicySet(
  tx: SqlOrTx,
  accountId: string,
  environment: Environment,
  version: number,
  hash: string,
  at: Date,
): Promise<void> {
  await tx`update policy_sets set version = ${version}, hash = ${hash}, updated_at = ${at}
           where account_id = ${accountId} and environment = ${environment}`;
}

export async function loadPolicies<P extends PolicyDocument>(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
): Promise<Array<PolicyRecord<P>>> {
  const rows = await sql<Array<{ body: P; created_at: Date; updated_at: Date }>>`
    select body, created_at, updated_at from policies
    where account_id = ${accountId} and environment = ${environment} and generation = ${active(sql, accountId, environment)} order by seq`;
  return rows.map((r) => ({ policy: r.body, created_at: r.created_at, updated_at: r.updated_at }));
}

export async function findPolicy<P extends PolicyDocument>(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<PolicyRecord<P> | undefined> {
  const [row] = await sql<Array<{ body: P; created_at: Date; updated_at: Date }>>`
    select body, created_at, updated_at from policies
    where account_id = ${accountId} and environment = ${environment} and generation = ${active(sql, accountId, environment)} and id = ${id}`;
  return row && { policy: row.body, created_at: row.created_at, updated_at: row.updated_at };
}

export async function listPolicies<P extends PolicyDocument>(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
): Promise<Page<PolicyRecord<P>>> {
  const result = await pageQuery(
    page,
    (cursor, limit) => sql<Array<{ body: P; created_at: Date; updated_at: Date; seq: number }>>`
    select body, created_at, updated_at, seq from policies
    where account_id = ${accountId} and environment = ${environment} and generation = ${active(sql, accountId, environment)}
      ${cursor === null ? sql`` : sql`and seq < (select seq from policies where account_id = ${accountId} and environment = ${environment} and generation = ${active(sql, accountId, environment)} and id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from policies where account_id = ${accountId} and environment = ${environment} and generation = ${active(sql, accountId, environment)} and id = ${cursor}`,
      ),
  );
  return {
    has_more: result.has_more,
    data: result.data.map((r) => ({ policy: r.body, created_at: r.created_at, updated_at: r.updated_at })),
  };
}

export async function upsertPolicy(
  tx: SqlOrTx,
  accountId: string,
  environment: Environment,
  policy: PolicyDocument,
  at: Date,
): Promise<void> {
  await tx`insert into policies (account_id, environment, generation, id, body, created_at, updated_at)
           values (${accountId}, ${environment}, ${active(tx, accountId, environment)}, ${policy.id}, ${tx.json(policy as never)}, ${at}, ${at})
           on conflict (account_id, environment, generation, id) do update set body = excluded.body, updated_at = excluded.updated_at`;
}

export async function deletePolicy(
  tx: SqlOrTx,
  accountId: string,
  environment: Environment,
  id: string,
): Promise<boolean> {
  const rows = await tx`delete from policies
    where account_id = ${accountId} and environment = ${environment} and generation = ${active(tx, accountId, environment)} and id = ${id} returning id`;
  return rows.length > 0;
}
