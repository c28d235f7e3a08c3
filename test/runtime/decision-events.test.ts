/**
 * A decision's event carries the decision as GET /v1/decisions/:id showed it
 * when decided. Allow and deny events are derived from their decisions
 * (migration 025) and built when read (runtime/events/references.ts), so they
 * must show the decision as decided even after it was confirmed or rejected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

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
      {
        agent_id: 'ev-1',
        action: 'orders.read',
        resource: 'order:1',
        amount: 12.5,
        context: { a: 1 },
        ttl_seconds: 60,
      },
      { agent_id: 'ev-1', action: 'orders.read', resource: 'order:vip-1' },
      { agent_id: 'ev-2', action: 'orders.delete' },
    ];
    for (const body of bodies) {
      const d = json(await rt.call(rt.testKey, { method: 'POST', url: '/v1/decisions', payload: body }));
      const events = (await rt.getOk(`/v1/events?type=decision.${d.effect}&limit=100`)).data as Array<JsonObject>;
      const event = events.find((e) => e.data.decision.id === d.id);
      expect(event, `event of ${d.id}`).toBeDefined();
      expect(event!.created_at).toBe(d.evaluated_at);
      const { permit_token: _token, ...stored } = await rt.getOk(`/v1/decisions/${d.id}`);
      expect(event!.data.decision).toEqual(stored);
      expect(event!.data.decision).not.toHaveProperty('permit_token');
    }
  });

  it('allow and deny events are derived from their decisions and still show the decision as decided after it moved on', async () => {
    const allow = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'ev-3', action: 'orders.read', resource: 'order:7', amount: 4 },
      }),
    );
    const rejected = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'ev-3', action: 'orders.read', resource: 'order:8' },
      }),
    );
    const deny = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'ev-3', action: 'orders.delete' },
      }),
    );
    const review = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'ev-3', action: 'orders.read', resource: 'order:vip-3' },
      }),
    );
    const asDecided = new Map<string, unknown>();
    for (const d of [allow, rejected, deny, review]) {
      const { permit_token: _token, ...answered } = d;
      asDecided.set(d.id, answered);
    }
    expect(
      json(
        await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${allow.id}/confirm`, payload: { amount: 3 } }),
      ).status,
    ).toBe('confirmed');
    expect(json(await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${rejected.id}/reject` })).status).toBe(
      'rejected',
    );

    const stored = await rt.store.sql<Array<{ decision_id: string | null; has_data: boolean; type: string }>>`
      select decision_id, data is not null as has_data, type from events
      where account_id = ${rt.accountId} and type like 'decision.%'
        and (decision_id = any(${[allow.id, rejected.id, deny.id]}) or data->'decision'->>'id' = ${review.id})`;
    // No endpoint subscribes: the allow and deny events have no row; the review event has its own, with its body.
    expect(stored.map((r) => [r.type, r.has_data, r.decision_id])).toEqual([['decision.review', true, null]]);

    const events = (await rt.getOk('/v1/events?limit=100')).data as Array<JsonObject>;
    for (const [id, answered] of asDecided) {
      const event = events.find((e) => e.data.decision?.id === id);
      expect(event, `event of ${id}`).toBeDefined();
      expect(event!.data.decision).toEqual(answered);
      expect(await rt.getOk(`/v1/events/${event!.id}`)).toEqual(event);
    }
  });
});
