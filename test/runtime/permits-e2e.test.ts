/**
 * End to end over real sockets: the runtime on a port, a token from
 * POST /v1/decisions, the example downstream service verifying it with the
 * published JWKS through the verifier library. One JWKS serves every account's
 * permits, so the downstream service's verifier is bound to its account and
 * environment: the red-team reproduction (tenant B's permit for orders.read on
 * order:1001 at tenant A's service; a test permit at a live service) is here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDownstreamService } from '../../examples/downstream-service/server.js';
import type { Policy } from '../../compiler/index.js';
import { installPolicies } from '../../runtime/seed.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

describe.each(STORE_KINDS)('permit token end to end (runtime -> JWKS -> downstream service), %s store', (kind) => {
  let rt: TestRuntime;
  let base: string;
  const readOrders: Pick<Policy, 'effect' | 'agents' | 'actions' | 'resources'> = {
    effect: 'allow',
    agents: ['support-*'],
    actions: ['orders.read', 'payments.refund'],
    resources: ['order:*'],
  };
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([readOrders]);
    await rt.setPolicies([readOrders], 'live');
    // Tenant B: another account of the same service, allowed the same actions.
    await installPolicies(rt.services, rt.otherAccountId, 'test', [
      { id: 'pol_b', name: 'b', state: 'enabled', priority: 100, ...readOrders } as Policy,
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const address = rt.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => rt.close());

  /** The example service of `account` in `environment`; the runtime runs on a test clock, which the verifier follows. */
  const downstreamOf = (account: string, environment: 'test' | 'live') =>
    buildDownstreamService({
      jwksUrl: `${base}/.well-known/jwks.json`,
      issuer: rt.services.config.baseUrl,
      account,
      environment,
      verifier: { now: () => rt.clock.now() },
    });

  const permitFor = async (key: string, action: string, resource: string): Promise<string> => {
    const decision = json(
      await rt.call(key, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'support-1', action, resource },
      }),
    );
    expect(decision.effect, JSON.stringify(decision)).toBe('allow');
    return decision.permit_token as string;
  };

  it('admits the matching route only, and rejects tampering', async () => {
    const decision = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'support-1', action: 'payments.refund', resource: 'order:42' },
      }),
    );
    expect(decision.effect).toBe('allow');
    const downstream = await downstreamOf(rt.accountId, 'test');
    try {
      const call = (url: string, token: string) =>
        downstream.inject({
          method: url.endsWith('refund') ? 'POST' : 'GET',
          url,
          headers: { authorization: `Bearer ${token}` },
        });
      const ok = await call('/orders/42/refund', decision.permit_token);
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.json()).toMatchObject({ decision_id: decision.id, agent_id: 'support-1' });
      const otherOrder = await call('/orders/43/refund', decision.permit_token);
      expect(otherOrder.statusCode).toBe(403);
      expect(otherOrder.json().error.code).toBe('permit.mismatch');
      const otherAction = await call('/orders/42', decision.permit_token);
      expect(otherAction.statusCode).toBe(403);
      const [h, p, s] = (decision.permit_token as string).split('.');
      const tampered = await call('/orders/42/refund', `${h}.${p!.slice(0, -2)}xx.${s}`);
      expect(tampered.statusCode).toBe(401);
      expect(tampered.json().error.code).toBe('auth.signature_invalid');
    } finally {
      await downstream.close();
    }
  });

  it("refuses tenant B's permit for orders.read on order:1001 at tenant A's service, and a test permit at a live service", async () => {
    const tenantA = await downstreamOf(rt.accountId, 'test');
    const tenantALive = await downstreamOf(rt.accountId, 'live');
    const tenantB = await downstreamOf(rt.otherAccountId, 'test');
    try {
      const read = (app: typeof tenantA, token: string) =>
        app.inject({ method: 'GET', url: '/orders/1001', headers: { authorization: `Bearer ${token}` } });
      const permitOfB = await permitFor(rt.otherKey, 'orders.read', 'order:1001');
      // Signed by the same key, for the same action and resource: only the account differs.
      const refusedAtA = await read(tenantA, permitOfB);
      expect(refusedAtA.statusCode, refusedAtA.body).toBe(401);
      expect(refusedAtA.json().error.code).toBe('auth.signature_invalid');
      expect((await read(tenantB, permitOfB)).statusCode).toBe(200);

      const testPermitOfA = await permitFor(rt.testKey, 'orders.read', 'order:1001');
      const refusedInLive = await read(tenantALive, testPermitOfA);
      expect(refusedInLive.statusCode, refusedInLive.body).toBe(401);
      expect(refusedInLive.json().error.code).toBe('auth.signature_invalid');
      expect((await read(tenantA, testPermitOfA)).statusCode).toBe(200);
      expect((await read(tenantALive, await permitFor(rt.liveKey, 'orders.read', 'order:1001'))).statusCode).toBe(200);
    } finally {
      await Promise.all([tenantA.close(), tenantALive.close(), tenantB.close()]);
    }
  });
});
