/** The public form of an agent (docs/api.md#agents; `attributes`: third part, Agent attributes). */
import type { Agent } from '../../clients/typescript/wire.js';
import type { AgentRow } from '../store/agents.js';
import type { Environment } from '../tenant.js';

export function agentResource(row: AgentRow, environment: Environment): Agent {
  return {
    agent_id: row.agent_id,
    object: 'agent',
    status: row.status,
    first_seen_at: row.first_seen_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
    attributes: row.attributes,
    livemode: environment === 'live',
  };
}
