/**
 * Permits after the fact (runtime/domain/permits.ts): POST /v1/permits/verify
 * answers 200 `valid: false` with a reason for a well-signed, unexpired token
 * whose decision was rejected, whose agent was revoked, or whose policy was
 * deleted or disabled since; `valid: true` again once the agent or policy is
 * back; a bad signature or an expired token stays 401. On both stores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { decide as kitDecide } from '../helpers/kit.js';

describe.each(STORE_KINDS)('permits that no longer stand (%s)', (kind) => {
  let rt: TestRuntime;
  const post = async (url: string, payload?: Record<string, unknown>) =>
    rt.call(rt.testKey, { method: 'POST', url, ...(payload ? { payload } : {}) });
  const decide = (agent_id: string, action: string) => kitDecide(rt, { agent_id, action });
  const verify = async (token: string | null) => {
    const r = await post('/v1/permits/verify', { token });
    return { status: r.statusCode, body: json(r) };
  };

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_reads', effect: 'allow', actions: ['orders.read'] },
      { id: 'pol_refunds', effect: 'review', actions: ['payments.refund'] },
    ]);
  });
  afterAll(() => rt?.close());

  it('a permit of a rejected decision: valid false, decision.rejected; a confirmed one stays valid', async () => {
    const rejected = await decide('standing-bot-1', 'payments.refund');
    const confirmed = await decide('standing-bot-1', 'payments.refund');
    expect(await verify(rejected.permit_token)).toMatchObject({ status: 200, body: { valid: true } });
    expect((await post(`/v1/decisions/${rejected.id}/reject`)).statusCode).toBe(200);
    expect((await post(`/v1/decisions/${confirmed.id}/confirm`)).statusCode).toBe(200);
    const r = await verify(rejected.permit_token);
    expect(r).toEqual({
      status: 200,
      body: {
        object: 'permit_verification',
        valid: false,
        reason: 'decision.rejected',
        claims: expect.objectContaining({ dec: rejected.id, sub: 'standing-bot-1' }),
      },
    });
    expect(await verify(confirmed.permit_token)).toMatchObject({
      status: 200,
      body: { valid: true, claims: { dec: confirmed.id } },
    });
    expect((await verify(confirmed.permit_token)).body).not.toHaveProperty('reason');
  });

  it('a permit of an agent revoked since: valid false, agent.revoked; valid again once restored', async () => {
    const d = await decide('standing-bot-2', 'orders.read');
    expect((await verify(d.permit_token)).body.valid).toBe(true);
    expect((await post('/v1/agents/standing-bot-2/revoke')).statusCode).toBe(200);
    expect(await verify(d.permit_token)).toMatchObject({
      status: 200,
      body: { valid: false, reason: 'agent.revoked', claims: { sub: 'standing-bot-2' } },
    });
    expect((await post('/v1/agents/standing-bot-2/restore')).statusCode).toBe(200);
    expect((await verify(d.permit_token)).body).toMatchObject({ valid: true });
  });

  it('a permit of a policy disabled or deleted since: policy.disabled, then policy.not_found', async () => {
    const body = { id: 'pol_standing', name: 'standing-exports', effect: 'allow', actions: ['reports.export'] };
    expect((await post('/v1/policies', body)).statusCode).toBe(201);
    const d = await decide('standing-bot-3', 'reports.export');
    expect(d).toMatchObject({ effect: 'allow', policy_id: 'pol_standing' });
    expect((await verify(d.permit_token)).body.valid).toBe(true);

    const put = (state: string) =>
      rt.call(rt.testKey, { method: 'PUT', url: '/v1/policies/pol_standing', payload: { ...body, state } });
    expect((await put('disabled')).statusCode).toBe(200);
    expect((await verify(d.permit_token)).body).toMatchObject({ valid: false, reason: 'policy.disabled' });
    expect((await put('enabled')).statusCode).toBe(200);
    expect((await verify(d.permit_token)).body).toMatchObject({ valid: true });
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: '/v1/policies/pol_standing' })).statusCode).toBe(200);
    expect((await verify(d.permit_token)).body).toMatchObject({
      valid: false,
      reason: 'policy.not_found',
      claims: { dec: d.id },
    });
  });

  it('a bad signature and an expired token stay 401, whatever became of the decision', async () => {
    const d = await decide('standing-bot-4', 'payments.refund');
    expect((await post(`/v1/decisions/${d.id}/reject`)).statusCode).toBe(200);
    const [h, p, s] = (d.permit_token as string).split('.') as [string, string, string];
    const tampered = `${h}.${p}.${s.startsWith('A') ? 'B' : 'A'}${s.slice(1)}`;
    expect(await verify(tampered)).toMatchObject({ status: 401, body: { error: { code: 'auth.signature_invalid' } } });
    rt.clock.advance(d.ttl_seconds + 1);
    try {
      expect(await verify(d.permit_token)).toMatchObject({ status: 401, body: { error: { code: 'auth.expired' } } });
    } finally {
      rt.clock.advance(-(d.ttl_seconds + 1));
    }
  });
});
