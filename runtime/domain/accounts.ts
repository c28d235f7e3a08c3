/**
 * Accounts and their API keys (the operator API, the seed, the CLI's keys
 * commands): create an account, create, revoke and roll a key. The full key
 * exists only in the value `createApiKey` returns; the store keeps its hash.
 * A revocation (also the old key of a roll) commits with `NOTIFY
 * authz_api_keys`, so every process drops the key from its cache at once.
 */
import { displayPrefix, generateApiKey, hashApiKey } from '../auth/api-keys.js';
import type { ApiKeyCache } from '../auth/key-cache.js';
import type { Clock } from '../clock.js';
import { AccountNotFoundError, ApiKeyNotFoundError } from '../errors/api-error.js';
import { newId } from '../ids.js';
import {
  findAccount,
  findAccountsByName,
  insertAccount,
  insertApiKey,
  revokeApiKey,
  revokeLiveApiKey,
  type AccountRow,
} from '../store/accounts.js';
import { CHANNELS, notify } from '../store/channels.js';
import type { Sql, SqlOrTx } from '../store/connect.js';
import type { Environment } from '../tenant.js';

/** An API key just made: the full key exists only here (the store keeps its hash). Its public form: presenters/account.ts. */
export interface CreatedKey {
  id: string;
  key: string;
  account_id: string;
  environment: Environment;
  scopes: string[];
  created_at: Date;
}

/** An account (its stored row). Its public form: presenters/account.ts. */
export type AccountRecord = AccountRow;

/**
 * Creates an API key in the caller's transaction; the full key exists only in
 * the returned value. `replaces`: the key it rolls (its rotation chain).
 *
 * @example
 * const { key } = await createApiKey(sql, accountId, 'test', ['*'], new Date(clock.now()));
 */
export async function createApiKey(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  scopes: string[],
  at: Date,
  replaces: string | null = null,
): Promise<CreatedKey> {
  const key = generateApiKey(environment);
  const id = newId('key', at.getTime());
  await insertApiKey(
    sql,
    {
      id,
      account_id: accountId,
      environment,
      key_prefix: displayPrefix(key),
      scopes,
      created_at: at,
      revoked_at: null,
    },
    hashApiKey(key),
    replaces,
  );
  return { id, key, account_id: accountId, environment, scopes, created_at: at };
}

/**
 * Creates an account in the caller's transaction.
 *
 * @example
 * const account = await createAccount(sql, 'acme', new Date(clock.now()));
 */
export async function createAccount(sql: SqlOrTx, name: string, at: Date): Promise<AccountRecord> {
  const id = newId('acc', at.getTime());
  await insertAccount(sql, { id, name, created_at: at });
  return { id, name, created_at: at };
}

/** Most accounts {@link AccountService.findByName} answers (names are meant to be unique in practice). */
export const ACCOUNTS_BY_NAME_LIMIT = 100;

export class AccountService {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly keys: ApiKeyCache,
  ) {}

  createAccount(name: string): Promise<AccountRecord> {
    return createAccount(this.sql, name, new Date(this.clock.now()));
  }

  /** The accounts named `name`, oldest first (at most {@link ACCOUNTS_BY_NAME_LIMIT}). */
  async findByName(name: string): Promise<AccountRecord[]> {
    return findAccountsByName(this.sql, name, ACCOUNTS_BY_NAME_LIMIT);
  }

  /** 404 account.not_found for an unknown account. */
  async createApiKey(accountId: string, environment: Environment, scopes: string[]): Promise<CreatedKey> {
    const account = await findAccount(this.sql, accountId);
    if (!account) throw new AccountNotFoundError(`no account ${accountId}`);
    return createApiKey(this.sql, account.id, environment, scopes, new Date(this.clock.now()));
  }

  /**
   * Revokes a key: this process refuses it at once, other processes when the
   * `NOTIFY authz_api_keys` sent with the change reaches them (milliseconds).
   */
  async revokeApiKey(id: string): Promise<void> {
    const at = new Date(this.clock.now());
    const found = await this.sql.begin(async (tx) => {
      if (!(await revokeApiKey(tx, id, at))) return false;
      await notify(tx, CHANNELS.apiKeys, id);
      return true;
    });
    if (!found) throw new ApiKeyNotFoundError(`no API key ${id}`);
    this.keys.forget(id);
  }

  /**
   * Rolls a key (Stripe's "roll key"): a new key of the same account,
   * environment and scopes, and the old one revoked, in one transaction (with
   * the `NOTIFY authz_api_keys` of the old one). An unknown or already revoked
   * key: 404.
   */
  async rotateApiKey(oldId: string): Promise<CreatedKey> {
    const at = new Date(this.clock.now());
    const created = await this.sql.begin(async (tx) => {
      const old = await revokeLiveApiKey(tx, oldId, at);
      if (!old) return null;
      await notify(tx, CHANNELS.apiKeys, oldId);
      // The new key names the old one: the rotation chain counts as one reviewer (domain/reviews.ts).
      return createApiKey(tx, old.account_id, old.environment, old.scopes, at, oldId);
    });
    if (!created) throw new ApiKeyNotFoundError(`no live API key ${oldId} (unknown or already revoked)`);
    this.keys.forget(oldId);
    return created;
  }
}
