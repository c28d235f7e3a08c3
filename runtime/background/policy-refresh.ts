/**
 * Keeping several server processes on one PostgreSQL in step: policy-set changes
 * and agent changes (status, attributes) are announced with NOTIFY by the process that made
 * them; every process LISTENs, and also compares every environment's stored
 * version with its compiled one each `intervalMs` (a missed notification, a
 * reconnect), so a replica never serves a stale set for longer than that.
 */
import { CHANNELS, parseAgentStatusPayload, parsePolicySetPayload } from '../store/channels.js';
import type { Store } from '../store/connect.js';
import { allPolicySetVersions } from '../store/policies.js';
import type { AgentDirectory } from '../domain/agent-directory.js';
import type { PolicySets } from '../domain/policy-sets.js';
import { startTask, type Stoppable } from './task.js';

/** Policy refresh or key replication, started: `stop()` ends it. */
export type Replication = Stoppable;

export async function startReplication(
  store: Store,
  policySets: PolicySets,
  agents: AgentDirectory,
  intervalMs = 1000,
  onError: (e: unknown) => void = () => {},
): Promise<Replication> {
  return startTask(store, {
    listens: [
      {
        channel: CHANNELS.policies,
        onPayload: (payload) => {
          const change = parsePolicySetPayload(payload);
          if (change) policySets.refresh(change.accountId, change.environment, change.version).catch(onError);
        },
      },
      {
        channel: CHANNELS.agents,
        onPayload: (payload) => {
          const change = parseAgentStatusPayload(payload);
          if (!change) return;
          if (change.status === 'changed') agents.forget(change.accountId, change.environment, change.agentId);
          else agents.setStatus(change.accountId, change.environment, change.agentId, change.status);
        },
      },
    ],
    rounds: {
      run: async () => {
        for (const v of await allPolicySetVersions(store.sql))
          await policySets.refreshIfLoaded(v.account_id, v.environment, v.version);
      },
      intervalMs,
    },
    onError,
  });
}
