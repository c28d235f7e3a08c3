/**
 * Agents: listed, read, revoked and restored. A revoke or restore changes the
 * row, stores `agent.revoked` (a revoke) and notifies every process in one
 * transaction; this process's directory learns it at once, the others by
 * NOTIFY (background/policy-refresh.ts).
 */
import type { Clock } from '../clock.js';
import { AgentNotFoundError } from '../errors/api-error.js';
import { agentEvent } from '../events/build.js';
import { agentStatusPayload, CHANNELS, notify } from '../store/channels.js';
import type { Sql } from '../store/connect.js';
import { findAgent, listAgents, setAgentStatus, type AgentRow, type AgentStatus } from '../store/agents.js';
import { insertEvents } from '../store/events.js';
import type { Page, PageParams } from '../store/pagination.js';
import type { Principal } from '../tenant.js';
import type { AgentDirectory } from './agent-directory.js';

const notSeen = (agentId: string) => new AgentNotFoundError(`no agent ${agentId} has made a request in this environment`);

export class AgentService {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly directory: AgentDirectory,
  ) {}

  list(p: Principal, page: PageParams): Promise<Page<AgentRow>> {
    return listAgents(this.sql, p.accountId, p.environment, page);
  }

  async get(p: Principal, agentId: string): Promise<AgentRow> {
    const row = await findAgent(this.sql, p.accountId, p.environment, agentId);
    if (!row) throw notSeen(agentId);
    return row;
  }

  /** Fires agent.revoked; the agent's later decisions are deny agent.revoked. A no-op when already revoked. */
  revoke(p: Principal, agentId: string): Promise<AgentRow> {
    return this.transition(p, agentId, 'revoked');
  }

  /** Lifts a revocation (a no-op for an active agent). */
  restore(p: Principal, agentId: string): Promise<AgentRow> {
    return this.transition(p, agentId, 'active');
  }

  private async transition(p: Principal, agentId: string, to: AgentStatus): Promise<AgentRow> {
    const now = this.clock.now();
    const row = await this.sql.begin(async (tx) => {
      const changed = await setAgentStatus(tx, p.accountId, p.environment, agentId, to, new Date(now));
      if (!changed) {
        const existing = await findAgent(tx, p.accountId, p.environment, agentId);
        if (!existing) throw notSeen(agentId);
        return existing; // already in that state: no-op
      }
      if (to === 'revoked') await insertEvents(tx, [agentEvent('agent.revoked', changed, p, now)]);
      await notify(tx, CHANNELS.agents, agentStatusPayload({ accountId: p.accountId, environment: p.environment, status: to, agentId }));
      return changed;
    });
    this.directory.set(p.accountId, p.environment, agentId, row.status);
    return row;
  }
}
