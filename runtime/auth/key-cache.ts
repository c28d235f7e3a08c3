/**
 * Resolving an API key to its account, environment and scopes without a store
 * round trip per request: results (found or not) are kept for a short time.
 * Revoking a key through this process drops it at once; other processes see a
 * revocation within `ttlMs`.
 */
import { TtlCache } from '../shared/ttl-cache.js';
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { findApiKeyByHash, type ApiKeyRow } from '../store/accounts.js';
import { hashApiKey, parseApiKey } from './api-keys.js';

export class ApiKeyCache {
  private readonly cache: TtlCache<ApiKeyRow | null>;

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
    if (parseApiKey(key) === null) return null;
    const hash = hashApiKey(key);
    const cacheKey = hash.toString('base64');
    const hit = this.cache.get(cacheKey);
    if (hit) return hit.value;
    const row = (await findApiKeyByHash(this.sql, hash)) ?? null;
    this.cache.set(cacheKey, row);
    return row;
  }

  /** Forgets every cached key with this id (after a revocation). */
  forget(keyId: string): void {
    this.cache.deleteWhere((row) => row?.id === keyId);
  }
}
