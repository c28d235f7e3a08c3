/**
 * The service the adapter tests decide against: a runtime on loopback with the
 * support-style policies below, and an AuthzClient for it.
 */
import { AuthzClient } from '../../../clients/typescript/index.js';
import type { StoreKind } from '../../helpers/postgres.js';
import { startRuntime, type TestRuntime } from '../../runtime/helpers/app.js';
import type { JsonObject } from '../../helpers/json.js';

export interface AdapterService {
  rt: TestRuntime;
  base: string;
  authz: AuthzClient;
  /** A client for one agent run: every decision in session `sessionId`. */
  inSession(sessionId: string): AuthzClient;
  decisionsOf(agentId: string): Promise<Array<JsonObject>>;
  refundBudget(agentId: string): Promise<JsonObject | undefined>;
}

let seq = 0;
/** A fresh agent id (policies match `support-*`). */
export const supportAgent = (tag: string) => `support-${tag}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

export async function startAdapterService(kind: StoreKind): Promise<AdapterService> {
  const rt = await startRuntime(kind);
  await rt.setPolicies([
    { id: 'pol_lookup', effect: 'allow', agents: ['support-*'], actions: ['orders.read'], resources: ['order:*'] },
    {
      id: 'pol_refund_small',
      effect: 'allow',
      agents: ['support-*'],
      actions: ['payments.refund'],
      resources: ['order:*'],
      condition: 'amount <= 50',
      budget: { unit: 'USD', limit: 100, period: 'monthly', threshold_alert: 0.8 },
    },
    {
      id: 'pol_refund_large',
      effect: 'review',
      agents: ['support-*'],
      actions: ['payments.refund'],
      resources: ['order:*'],
      condition: 'amount > 50',
    },
    { id: 'pol_delete', effect: 'deny', agents: ['support-*'], actions: ['customers.delete'] },
    // Labels (docs/adapters.md#labels-a-tool-result-carries): a tool declares what its results carry; mail is refused once the session holds private data.
    { id: 'pol_files_read', effect: 'allow', agents: ['support-*'], actions: ['files.read'] },
    { id: 'pol_mail', effect: 'allow', agents: ['support-*'], actions: ['email.send'] },
    {
      id: 'pol_mail_after_private',
      effect: 'deny',
      priority: 10,
      agents: ['support-*'],
      actions: ['email.send'],
      condition: "contains(session.labels, 'private')",
    },
  ]);
  await rt.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
  return {
    rt,
    base,
    authz: new AuthzClient({ baseUrl: base, apiKey: rt.testKey, backoffMs: 10 }),
    inSession: (sessionId) => new AuthzClient({ baseUrl: base, apiKey: rt.testKey, backoffMs: 10, sessionId }),
    decisionsOf: async (agentId) =>
      (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>,
    refundBudget: async (agentId) =>
      ((await rt.getOk(`/v1/budgets?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>).find(
        (b) => b.policy_id === 'pol_refund_small',
      ),
  };
}
