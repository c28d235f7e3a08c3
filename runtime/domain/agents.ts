/**
 * Agents: listed, read, given attributes, revoked and restored. A change
 * writes the row, its event (`agent.revoked` for a revoke, `agent.registered`
 * when attributes make an unseen agent known) and the NOTIFY to every process
 * in one transaction; this process's directory learns it at once, the others
 * by NOTIFY (background/policy-refresh.ts).
 */
import type { Clock } from '../clock.js';
import { AgentNotFoundError, BodyTooLargeError } from '../errors/api-error.js';
import { agentEvent } from '../events/build.js';
import { agentChangedPayload, agentStatusPayload, CHANNELS, notify } from '../store/channels.js';
import type { Sql } from '../store/connect.js';
import {
  findAgent,
  listAgents,
  putAgentAttributes,
  setAgentStatus,
  type AgentRow,
  type AgentStatus,
} from '../store/agents.js';
import { insertEvents } from '../store/events.js';
import type { Page, PageParams } from '../store/pagination.js';
import type { Principal } from '../tenant.js';
import type { AgentDirectory } from './agent-directory.js';

/** The most an agent's attributes may hold, in bytes of UTF-8 JSON (docs/policies.md#agent-attributes). */
export const MAX_ATTRIBUTES_BYTES = 8192;

const notSeen = (agentId: string) =>
  new AgentNotFoundError(`no agent ${agentId} has made a request in this environment`);

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

  /**
   * PUT /v1/agents/:agent_id: replaces the agent's attributes (a JSON object,
   * checked by the route schema; at most 8,192 bytes of UTF-8 JSON, else 413
   * validation.body_too_large). An unseen agent becomes
   * known and `agent.registered` fires, once; its first decision then fires
   * nothing. This process's next decision uses the new attributes; the other
   * processes drop their copy on the NOTIFY.
   */
  async setAttributes(p: Principal, agentId: string, attributes: Record<string, unknown>): Promise<AgentRow> {
    const bytes = Buffer.byteLength(JSON.stringify(attributes), 'utf8');
    if (bytes > MAX_ATTRIBUTES_BYTES) {
      throw new BodyTooLargeError(
        `attributes are ${bytes} bytes of JSON; an agent's attributes hold at most ${MAX_ATTRIBUTES_BYTES} bytes`,
      );
    }
    const now = this.clock.now();
    const row = await this.sql.begin(async (tx) => {
      const { row, registered } = await putAgentAttributes(
        tx,
        p.accountId,
        p.environment,
        agentId,
        attributes,
        new Date(now),
      );
      if (registered) await insertEvents(tx, [agentEvent('agent.registered', row, p, now)]);
      await notify(
        tx,
        CHANNELS.agents,
        agentChangedPayload({ accountId: p.accountId, environment: p.environment, agentId }),
      );
      return row;
    });
    this.directory.set(p.accountId, p.environment, agentId, { status: row.status, attributes: row.attributes });
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
      await notify(
        tx,
        CHANNELS.agents,
        agentStatusPayload({ accountId: p.accountId, environment: p.environment, status: to, agentId }),
      );
      return changed;
    });
    this.directory.set(p.accountId, p.environment, agentId, { status: row.status, attributes: row.attributes });
    return row;
  }
}
