/**
 * What this process knows of agents' statuses, so a decision needs no store round
 * trip for an agent it has seen: a miss reads the store once; entries are trusted
 * for `ttlMs` (revocations through this process apply at once, through another
 * within the TTL at worst, sooner by NOTIFY).
 */
import type { Environment } from '../auth/api-keys.js';
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { findAgent, type AgentStatus } from '../store/agents.js';

/** `unknown`: not in the store yet; the decision registers it. */
export type KnownStatus = AgentStatus | 'unknown';

interface Entry {
  status: KnownStatus;
  until: number;
}

export class AgentDirectory {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 200_000,
  ) {}

  private key(accountId: string, environment: Environment, agentId: string): string {
    return `${accountId}:${environment}:${agentId}`;
  }

  status(accountId: string, environment: Environment, agentId: string): KnownStatus | Promise<KnownStatus> {
    const key = this.key(accountId, environment, agentId);
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.until > this.clock.now()) return hit.status;
    return findAgent(this.sql, accountId, environment, agentId).then((row) => {
      const status: KnownStatus = row ? row.status : 'unknown';
      this.set(accountId, environment, agentId, status);
      return status;
    });
  }

  set(accountId: string, environment: Environment, agentId: string, status: KnownStatus): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(this.key(accountId, environment, agentId), { status, until: this.clock.now() + this.ttlMs });
  }
}
