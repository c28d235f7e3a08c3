/** Agents: registered by decisions (store/decisions.ts) or by their attributes, revoked and restored here. */
import type { Environment } from '../tenant.js';
import type { SqlOrTx } from './connect.js';
import { exists, pageQuery, type Page, type PageParams } from './pagination.js';

export type AgentStatus = 'active' | 'revoked';

export interface AgentRow {
  agent_id: string;
  status: AgentStatus;
  first_seen_at: Date;
  revoked_at: Date | null;
  /** Set by PUT /v1/agents/:agent_id; `{}` when none were. */
  attributes: Record<string, unknown>;
}

const COLUMNS = 'agent_id, status, first_seen_at, revoked_at, attributes';

export async function findAgent(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  agentId: string,
): Promise<AgentRow | undefined> {
  const [row] = await sql<AgentRow[]>`select ${sql.unsafe(COLUMNS)} from agents
    where account_id = ${accountId} and environment = ${environment} and agent_id = ${agentId}`;
  return row;
}

export async function listAgents(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  page: PageParams,
): Promise<Page<AgentRow>> {
  return pageQuery(
    page,
    (cursor, limit) => sql<Array<AgentRow & { seq: number }>>`
    select ${sql.unsafe(COLUMNS)}, seq from agents
    where account_id = ${accountId} and environment = ${environment}
      ${cursor === null ? sql`` : sql`and seq < (select seq from agents where account_id = ${accountId} and environment = ${environment} and agent_id = ${cursor})`}
    order by seq desc limit ${limit}`,
    (cursor) =>
      exists(
        sql`select 1 from agents where account_id = ${accountId} and environment = ${environment} and agent_id = ${cursor}`,
      ),
  );
}

/**
 * Sets the status; returns the row when it changed, undefined when it already had
 * that status or does not exist (the caller tells which).
 */
export async function setAgentStatus(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  agentId: string,
  status: AgentStatus,
  at: Date,
): Promise<AgentRow | undefined> {
  const [row] = await sql<AgentRow[]>`
    update agents set status = ${status}, revoked_at = ${status === 'revoked' ? at : null}
    where account_id = ${accountId} and environment = ${environment} and agent_id = ${agentId} and status <> ${status}
    returning ${sql.unsafe(COLUMNS)}`;
  return row;
}

/**
 * Replaces the agent's attributes, registering the agent (active, first seen
 * `at`) when it is unknown. `registered` says whether this call inserted the
 * row (so its caller fires agent.registered exactly once, whatever the races).
 */
export async function putAgentAttributes(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  agentId: string,
  attributes: Record<string, unknown>,
  at: Date,
): Promise<{ row: AgentRow; registered: boolean }> {
  const [row] = await sql<Array<AgentRow & { registered: boolean }>>`
    insert into agents (account_id, environment, agent_id, status, first_seen_at, attributes)
    values (${accountId}, ${environment}, ${agentId}, 'active', ${at}, ${sql.json(attributes as never)})
    on conflict (account_id, environment, agent_id) do update set attributes = excluded.attributes
    returning ${sql.unsafe(COLUMNS)}, (xmax = 0) as registered`;
  const { registered, ...agent } = row!;
  return { row: agent, registered };
}

/**
 * Ids of the active (not revoked) agents of the environment after `after`, in
 * id order (byte order: `collate "C"`), at most `limit`: AuthZEN subject search.
 */
export async function activeAgentIds(
  sql: SqlOrTx,
  accountId: string,
  environment: Environment,
  after: string | null,
  limit: number,
): Promise<string[]> {
  const rows = await sql<Array<{ agent_id: string }>>`
    select agent_id from agents
    where account_id = ${accountId} and environment = ${environment} and status = 'active'
      ${after === null ? sql`` : sql`and agent_id collate "C" > ${after}`}
    order by agent_id collate "C" limit ${limit}`;
  return rows.map((r) => r.agent_id);
}
