/** Accounts and their API keys. */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';

export interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  account_id: string;
  environment: Environment;
  key_prefix: string;
  scopes: string[];
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertAccount(sql: SqlOrTx, account: AccountRow): Promise<void> {
  await sql`insert into accounts (id, name, created_at) values (${account.id}, ${account.name}, ${account.created_at})`;
  await sql`insert into policy_sets (account_id, environment, version, updated_at)
            values (${account.id}, 'test', 0, ${account.created_at}), (${account.id}, 'live', 0, ${account.created_at})`;
}

export async function findAccount(sql: SqlOrTx, id: string): Promise<AccountRow | undefined> {
  const [row] = await sql<AccountRow[]>`select id, name, created_at from accounts where id = ${id}`;
  return row;
}

/** The accounts of that exact name, oldest first (names are not unique), at most `limit`. */
export async function findAccountsByName(sql: SqlOrTx, name: string, limit: number): Promise<AccountRow[]> {
  return sql<
    AccountRow[]
  >`select id, name, created_at from accounts where name = ${name} order by created_at, id limit ${limit}`;
}

export async function countAccounts(sql: SqlOrTx): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from accounts`;
  return row!.n;
}

/** Inserts a key; `replaces`: the key it was rolled from (its rotation chain, migration 019). */
export async function insertApiKey(
  sql: SqlOrTx,
  key: ApiKeyRow,
  hash: Buffer,
  replaces: string | null = null,
): Promise<void> {
  await sql`insert into api_keys (id, account_id, environment, key_hash, key_prefix, scopes, created_at, replaces)
            values (${key.id}, ${key.account_id}, ${key.environment}, ${hash}, ${key.key_prefix}, ${key.scopes}, ${key.created_at}, ${replaces})`;
}

/**
 * Every key of `id`'s rotation chain, itself included: the keys it replaced and
 * the keys that replaced it, transitively (one recursive read).
 *
 * @example
 * const chain = await rotationChain(sql, principal.keyId); // ['key_a', 'key_b', 'key_c']
 */
export async function rotationChain(sql: SqlOrTx, id: string): Promise<string[]> {
  const rows = await sql<Array<{ id: string }>>`
    with recursive chain (id) as (
      select ${id}::text
      union
      select case when k.id = c.id then k.replaces else k.id end
      from chain c join api_keys k on k.id = c.id or k.replaces = c.id
      where k.replaces = c.id or k.replaces is not null
    )
    select id from chain`;
  return rows.map((r) => r.id);
}

/** The live (not revoked) key with this hash. */
export async function findApiKeyByHash(sql: SqlOrTx, hash: Buffer): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`
    select id, account_id, environment, key_prefix, scopes, created_at, revoked_at
    from api_keys where key_hash = ${hash} and revoked_at is null`;
  return row;
}

/** Marks the key revoked; false when there is no such key. */
export async function revokeApiKey(sql: SqlOrTx, id: string, at: Date): Promise<boolean> {
  const rows = await sql`update api_keys set revoked_at = coalesce(revoked_at, ${at}) where id = ${id} returning id`;
  return rows.length > 0;
}

/**
 * Revokes the key only if it is live, and returns its record (now revoked);
 * undefined when there is no such key or it was revoked already. One statement,
 * so of two concurrent calls on one key only one gets the record.
 */
export async function revokeLiveApiKey(sql: SqlOrTx, id: string, at: Date): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys set revoked_at = ${at} where id = ${id} and revoked_at is null
    returning id, account_id, environment, key_prefix, scopes, created_at, revoked_at`;
  return row;
}
