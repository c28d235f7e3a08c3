/**
 * Resolving an API key to its account, environment and scopes without a store
 * round trip per request: results (found or not) are kept for a short time.
 * Revoking or rolling a key drops it at once in the process that did it, and in
 * every other process on the same PostgreSQL when `NOTIFY authz_api_keys`
 * arrives (runtime/background/key-replication.ts calls `forget`); `ttlMs` bounds
 * what a missed notification (a reconnect) can leave behind.
 */
import { TtlCache } from '../shared/ttl-cache.js';
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { findApiKeyByHash, type ApiKeyRow } from '../store/accounts.js';
import { apiKeyDigest, parseApiKey } from './api-keys.js';

export class ApiKeyCache {
  private readonly cache: TtlCache<ApiKeyRow | null>;
  /** Bumped by every `forget`: a lookup that was in flight across one is not cached. */
  private revocations = 0;

  constructor(
    private readonly sql: Sql,
    clock: Clock,
    ttlMs = 5_000,
    maxEntries = 10_000,
  ) {
    this.cache = new TtlCache(clock, ttlMs, maxEntries);
  }

  /** The key's record, or null when it is malformed, unknown or revoked. */
  async resolve(key: string): Promise<ApiKeyRow | null> {
    const known = this.lookup(key);
    return known instanceof Promise ? await known : known;
  }

  /**
   * As {@link resolve}, answered without a promise when memory knows the key (a
   * request's authentication then takes no turn of the event loop).
   *
   * @example
   * const known = keys.lookup(token);
   * const row = known instanceof Promise ? await known : known;
   */
  lookup(key: string): ApiKeyRow | null | Promise<ApiKeyRow | null> {
    if (parseApiKey(key) === null) return null;
    const cacheKey = apiKeyDigest(key);
    const hit = this.cache.get(cacheKey);
    if (hit) return hit.value;
    return this.read(cacheKey);
  }

  private async read(cacheKey: string): Promise<ApiKeyRow | null> {
    const before = this.revocations;
    const row = (await findApiKeyByHash(this.sql, Buffer.from(cacheKey, 'base64'))) ?? null;
    // A revocation that arrived while the row was read may be newer than the row.
    if (before === this.revocations) this.cache.set(cacheKey, row);
    return row;
  }

  /**
   * Forgets every cached key with this id (after a revocation, here or in another process).
   *
   * @example
   * keys.forget('key_01HV...'); // the next request with that key reads the store again: 401
   */
  forget(keyId: string): void {
    this.revocations++;
    this.cache.deleteWhere((row) => row?.id === keyId);
  }
}
