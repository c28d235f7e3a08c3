/**
 * What this process knows of agents' statuses, so a decision needs no store round
 * trip for an agent it has seen: a miss reads the store once; entries are trusted
 * for `ttlMs` (revocations through this process apply at once, through another
 * within the TTL at worst, sooner by NOTIFY).
 */
import type { Environment } from '../tenant.js';
import { TtlCache } from '../shared/ttl-cache.js';
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { findAgent, type AgentStatus } from '../store/agents.js';

/** `unknown`: not in the store yet; the decision registers it. */
export type KnownStatus = AgentStatus | 'unknown';

export class AgentDirectory {
  private readonly cache: TtlCache<KnownStatus>;

  constructor(
    private readonly sql: Sql,
    clock: Clock,
    ttlMs = 5_000,
    maxEntries = 200_000,
  ) {
    this.cache = new TtlCache(clock, ttlMs, maxEntries);
  }

  status(accountId: string, environment: Environment, agentId: string): KnownStatus | Promise<KnownStatus> {
    const hit = this.cache.get(`${accountId}:${environment}:${agentId}`);
    if (hit) return hit.value;
    return findAgent(this.sql, accountId, environment, agentId).then((row) => {
      const status: KnownStatus = row ? row.status : 'unknown';
      this.set(accountId, environment, agentId, status);
      return status;
    });
  }

  set(accountId: string, environment: Environment, agentId: string, status: KnownStatus): void {
    this.cache.set(`${accountId}:${environment}:${agentId}`, status);
  }
}
