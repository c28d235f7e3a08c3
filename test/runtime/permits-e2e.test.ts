/**
 * End to end over real sockets: the runtime on a port, a token from
 * POST /v1/decisions, the example downstream service verifying it with the
 * published JWKS through the verifier library.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDownstreamService } from '../../examples/downstream-service/server.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

describe('permit token end to end (runtime -> JWKS -> downstream service)', () => {
  let rt: TestRuntime;
  let base: string;
  beforeAll(async () => {
    rt = await startRuntime('postgres');
    await rt.setPolicies([{ effect: 'allow', agents: ['support-*'], actions: ['payments.refund'], resources: ['order:*'] }]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const address = rt.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => rt.close());

  it('admits the matching route only, and rejects tampering', async () => {
    const decision = json(await rt.call(rt.testKey, { method: 'POST', url: '/v1/decisions', payload: { agent_id: 'support-1', action: 'payments.refund', resource: 'order:42' } }));
    expect(decision.effect).toBe('allow');
    const jwksUrl = `${base}/.well-known/jwks.json`;
    const issuer = rt.services.config.baseUrl;
    // The runtime runs on a test clock; the verifier checks expiry on the same one.
    const downstream = await buildDownstreamService({ jwksUrl, issuer, verifier: { now: () => rt.clock.now() } });
    try {
      const call = (url: string, token: string) => downstream.inject({ method: url.endsWith('refund') ? 'POST' : 'GET', url, headers: { authorization: `Bearer ${token}` } });
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
});
