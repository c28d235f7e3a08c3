/**
 * A decision's event carries the decision as GET /v1/decisions/:id shows it at
 * that moment (built by the store from the stored row; the API builds it in
 * engine/decision-resource.ts: the two must stay the same shape).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

describe.each(STORE_KINDS)('decision events (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { effect: 'allow', actions: ['orders.read'], agents: ['ev-*'] },
      { effect: 'review', actions: ['orders.read'], agents: ['ev-*'], resources: ['order:vip-*'] },
      { effect: 'deny', actions: ['orders.delete'] },
    ]);
  });
  afterAll(() => rt.close());

  it('data.decision equals the decision read back, without the permit token, for each effect', async () => {
    const bodies = [
      { agent_id: 'ev-1', action: 'orders.read', resource: 'order:1', amount: 12.5, context: { a: 1 }, ttl_seconds: 60 },
      { agent_id: 'ev-1', action: 'orders.read', resource: 'order:vip-1' },
      { agent_id: 'ev-2', action: 'orders.delete' },
    ];
    for (const body of bodies) {
      const d = json(await rt.call(rt.testKey, { method: 'POST', url: '/v1/decisions', payload: body }));
      const events = (await rt.getOk(`/v1/events?type=decision.${d.effect}&limit=100`)).data as Array<Record<string, any>>;
      const event = events.find((e) => e.data.decision.id === d.id);
      expect(event, `event of ${d.id}`).toBeDefined();
      expect(event!.created_at).toBe(d.evaluated_at);
      const { permit_token: _token, ...stored } = await rt.getOk(`/v1/decisions/${d.id}`);
      expect(event!.data.decision).toEqual(stored);
      expect(event!.data.decision).not.toHaveProperty('permit_token');
    }
  });
});
