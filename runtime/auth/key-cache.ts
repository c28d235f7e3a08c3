/**
 * Resolving an API key to its account, environment and scopes without a store
 * round trip per request: results (found or not) are kept for a short time.
 * Revoking a key through this process drops it at once; other processes see a
 * revocation within `ttlMs`.
 */
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { findApiKeyByHash, type ApiKeyRow } from '../store/accounts.js';
import { hashApiKey, parseApiKey } from './api-keys.js';

interface Entry {
  row: ApiKeyRow | null;
  until: number;
}

export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The key's record, or null when it is malformed, unknown or revoked. */
  async resolve(key: string): Promise<ApiKeyRow | null> {
    if (parseApiKey(key) === null) return null;
    const hash = hashApiKey(key);
    const cacheKey = hash.toString('base64');
    const now = this.clock.now();
    const hit = this.entries.get(cacheKey);
    if (hit && hit.until > now) return hit.row;
    const row = (await findApiKeyByHash(this.sql, hash)) ?? null;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(cacheKey, { row, until: now + this.ttlMs });
    return row;
  }

  /** Forgets every cached key with this id (after a revocation). */
  forget(keyId: string): void {
    for (const [k, e] of this.entries) if (e.row?.id === keyId) this.entries.delete(k);
  }
}
