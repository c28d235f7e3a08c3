import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

describe.each(STORE_KINDS)('runtime smoke (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'], agents: ['bot-*'] }]);
  });
  afterAll(() => rt.close());

  it('decides and reads back', async () => {
    const r = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: 'bot-1', action: 'orders.read' },
    });
    expect(r.statusCode).toBe(200);
    const d = json(r);
    expect(d).toMatchObject({ effect: 'allow', reason: 'policy.matched', policy_id: 'pol_t0', status: 'pending' });
    const g = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}` });
    expect(json(g).id).toBe(d.id);
  });
});
