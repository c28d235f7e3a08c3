/** Agents: registered implicitly by decisions (store/decisions.ts), revoked and restored here. */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

export type AgentStatus = 'active' | 'revoked';

export interface AgentRow {
  agent_id: string;
  status: AgentStatus;
  first_seen_at: Date;
  revoked_at: Date | null;
}

export async function findAgent(sql: SqlOrTx, accountId: string, environment: Environment, agentId: string): Promise<AgentRow | undefined> {
  const [row] = await sql<AgentRow[]>`select agent_id, status, first_seen_at, revoked_at from agents
    where account_id = ${accountId} and environment = ${environment} and agent_id = ${agentId}`;
  return row;
}

export async function listAgents(sql: SqlOrTx, accountId: string, environment: Environment, page: PageParams): Promise<Page<AgentRow>> {
  return pageQuery(page, (cursor, limit) => sql<Array<AgentRow & { seq: number }>>`
    select agent_id, status, first_seen_at, revoked_at, seq from agents
    where account_id = ${accountId} and environment = ${environment}
      ${cursor === null ? sql`` : sql`and seq < (select seq from agents where account_id = ${accountId} and environment = ${environment} and agent_id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) => exists(sql`select 1 from agents where account_id = ${accountId} and environment = ${environment} and agent_id = ${cursor}`),
  );
}

/**
 * Sets the status; returns the row when it changed, undefined when it already had
 * that status or does not exist (the caller tells which).
 */
export async function setAgentStatus(sql: SqlOrTx, accountId: string, environment: Environment, agentId: string, status: AgentStatus, at: Date): Promise<AgentRow | undefined> {
  const [row] = await sql<AgentRow[]>`
    update agents set status = ${status}, revoked_at = ${status === 'revoked' ? at : null}
    where account_id = ${accountId} and environment = ${environment} and agent_id = ${agentId} and status <> ${status}
    returning agent_id, status, first_seen_at, revoked_at`;
  return row;
}
