/**
 * security.alert on both stores (docs/webhooks-and-events.md#security-alerts: data.alert,
 * data.agent_id, data.count, data.window_seconds, data.threshold): a deny spike
 * per agent, invalid permit tokens per account, request volume far above the
 * trailing baseline; at most one alert per kind, subject and window.
 */
import { eventRow } from '../../runtime/events/build.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ALERT_THRESHOLDS } from '../../runtime/alerts/security-alerts.js';
import { recordAlert } from '../../runtime/store/security-alerts.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';
import { postDecision } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

describe.each(STORE_KINDS)('security alerts (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, {
      config: {
        alerts: {
          ...DEFAULT_ALERT_THRESHOLDS,
          denyThreshold: 3,
          invalidTokenThreshold: 2,
          volumeMin: 30,
          volumeFactor: 2,
          volumeBaselineWindows: 3,
        },
      },
    });
    await rt.setPolicies([
      { effect: 'allow', actions: ['orders.read'] },
      { effect: 'deny', actions: ['orders.delete'] },
    ]);
  });
  afterAll(() => rt.close());

  const decide = (agent: string, action: string) => postDecision(rt, { agent_id: agent, action });
  const alerts = async () => {
    await rt.services.alerts.idle();
    return (
      (await rt.getOk('/v1/events?type=security.alert&limit=100')).data as Array<{
        created_at: string;
        data: JsonObject;
      }>
    ).reverse();
  };

  it('deny_spike: more than the threshold of denies for one agent in a window, once per window', async () => {
    rt.clock.set(Date.parse('2026-11-21T12:00:00.000Z'));
    for (let i = 0; i < 3; i++) await decide('spiky', 'orders.delete');
    await decide('calm', 'orders.delete');
    expect((await alerts()).filter((a) => a.data.alert === 'deny_spike')).toEqual([]);
    await decide('spiky', 'orders.delete'); // the 4th: over 3
    await decide('spiky', 'orders.delete');
    await decide('spiky', 'orders.read'); // allows do not count
    let spikes = (await alerts()).filter((a) => a.data.alert === 'deny_spike');
    expect(spikes.map((a) => a.data)).toEqual([
      { alert: 'deny_spike', agent_id: 'spiky', count: 4, window_seconds: 60, threshold: 3 },
    ]);
    expect(spikes[0]!.created_at).toBe('2026-11-21T12:00:00.000Z');
    // The next window may alert again.
    rt.clock.advance(60);
    for (let i = 0; i < 4; i++) await decide('spiky', 'orders.delete');
    spikes = (await alerts()).filter((a) => a.data.alert === 'deny_spike');
    expect(spikes.map((a) => a.created_at)).toEqual(['2026-11-21T12:00:00.000Z', '2026-11-21T12:01:00.000Z']);
  });

  it('invalid_permit_tokens: refused tokens per account and environment', async () => {
    rt.clock.set(Date.parse('2026-11-21T13:00:00.000Z'));
    for (let i = 0; i < 3; i++) {
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/permits/verify',
        payload: { token: `not-a-token-${i}` },
      });
      expect(r.statusCode).toBe(401);
    }
    const found = (await alerts()).filter((a) => a.data.alert === 'invalid_permit_tokens');
    expect(found.map((a) => a.data)).toEqual([
      { alert: 'invalid_permit_tokens', count: 3, window_seconds: 60, threshold: 2 },
    ]);
    // Other tenants have their own counts: the other account has no alert.
    expect((await rt.getOk('/v1/events?type=security.alert', rt.otherKey)).data).toEqual([]);
  });

  it('request_volume: far above the trailing baseline (and above the minimum)', async () => {
    // Three quiet windows of 10 decisions: baseline 10 per window, threshold max(30, 2 x 10) = 30.
    const start = Date.parse('2026-11-21T14:00:00.000Z');
    for (let w = 0; w < 3; w++) {
      rt.clock.set(start + w * 60_000);
      for (let i = 0; i < 10; i++) await decide(`vol-${i}`, 'orders.read');
    }
    expect((await alerts()).filter((a) => a.data.alert === 'request_volume')).toEqual([]);
    rt.clock.set(start + 3 * 60_000);
    for (let i = 0; i < 31; i++) await decide(`vol-${i % 5}`, 'orders.read');
    const found = (await alerts()).filter((a) => a.data.alert === 'request_volume');
    expect(found.map((a) => a.data)).toEqual([
      { alert: 'request_volume', count: 31, window_seconds: 60, threshold: 30 },
    ]);
  });

  it('one alert per kind, subject and window across processes (the store decides)', async () => {
    // Each process builds its own event (its own id) for the same window.
    const alert = () => ({
      account_id: rt.accountId,
      environment: 'test' as const,
      kind: 'deny_spike' as const,
      subject: 'shared-agent',
      window_start: new Date('2026-11-21T15:00:00.000Z'),
      event: eventRow('security.alert', rt.accountId, 'test', Date.parse('2026-11-21T15:00:10.000Z'), {
        alert: 'deny_spike',
        agent_id: 'shared-agent',
        count: 4,
        window_seconds: 60,
        threshold: 3,
      }),
    });
    const results = await Promise.all([recordAlert(rt.store.sql, alert()), recordAlert(rt.store.sql, alert())]);
    expect(results.sort()).toEqual([false, true]);
    expect((await alerts()).filter((a) => a.data.agent_id === 'shared-agent')).toHaveLength(1);
  });
});
