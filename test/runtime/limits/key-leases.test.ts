/**
 * The platform limit per API key with per-process leases (runtime/limits/key-leases.ts):
 * the state machine alone, then over HTTP on both stores with a clock that stands
 * still, so every count is exact: a burst passes exactly the bucket, refusals carry
 * the exact Retry-After, concurrent requests share one lease, and two processes on
 * one store never admit more than the bucket together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../runtime/app.js';
import { KeyLeases, LEASE_LIFETIME_MS } from '../../../runtime/limits/key-leases.js';
import { openServices } from '../../../runtime/services.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from '../helpers/app.js';

describe('KeyLeases', () => {
  it('checks every request in the store when a lease would be a single token', () => {
    const leases = new KeyLeases(39);
    expect(leases.leaseSize).toBe(1);
    const a = leases.admit('key_1', 0);
    expect(a).toMatchObject({ kind: 'store', lease: 1, check: { key: 'key:key_1', interval_ms: 1000 / 39, window_ms: 1000 } });
    expect(leases.admit('key_1', 0).kind).toBe('store');
  });

  it('is off at 0', () => {
    expect(new KeyLeases(0).admit('key_1', 0)).toEqual({ kind: 'off' });
  });

  it('leases 1/20 of the per-second limit (at most 256), spends it locally, and lets it lapse', () => {
    expect(new KeyLeases(1_000_000).leaseSize).toBe(256);
    const leases = new KeyLeases(100);
    expect(leases.leaseSize).toBe(5);
    const first = leases.admit('key_1', 0);
    expect(first).toMatchObject({ kind: 'store', lease: 5, check: { key: 'key:key_1', interval_ms: 50, window_ms: 1000 } });
    // A second request while the lease is in the store waits for it.
    const waiting = leases.admit('key_1', 0);
    expect(waiting.kind).toBe('wait');
    expect(leases.settle('key_1', 5, 0, true, null)).toBe(false);
    const local = Array.from({ length: 4 }, () => leases.admit('key_1', 1));
    expect(local.map((a) => a.kind)).toEqual(['local', 'local', 'local', 'local']);
    // At half a lease left (2 of 5), the request that took the token leases the next one ahead, once.
    expect(local.map((a) => (a.kind === 'local' && a.refill ? a.refill.lease : 0))).toEqual([0, 5, 0, 0]);
    // Out of tokens before the lease ahead is granted: wait for it.
    expect(leases.admit('key_1', 1).kind).toBe('wait');
    expect(leases.settle('key_1', 5, 1, true, null, true)).toBe(false);
    for (let i = 0; i < 5; i++) expect(leases.admit('key_1', 2).kind).toBe('local');
    leases.settle('key_1', 5, 2, true, null, true);
    // Unused tokens lapse with the lease.
    expect(leases.admit('key_1', 2 + LEASE_LIFETIME_MS)).toMatchObject({ kind: 'store', lease: 5 });
  });

  it('a lease granted ahead adds to the tokens still held; one refused ahead switches to exact checks once they are spent', () => {
    const leases = new KeyLeases(200); // leases of 10
    leases.admit('key_1', 0);
    leases.settle('key_1', 10, 0, true, null); // 9 held
    const taken = Array.from({ length: 5 }, () => leases.admit('key_1', 1)); // 4 held: the fifth asked ahead
    const ahead = taken.find((a) => a.kind === 'local' && a.refill);
    expect(ahead).toBeDefined();
    leases.settle('key_1', 10, 1, true, null, true); // 4 + 10
    for (let i = 0; i < 14; i++) expect(leases.admit('key_1', 2).kind).toBe('local');
    // (The lease ahead asked for on the way down is refused: the bucket is low.)
    expect(leases.settle('key_1', 10, 2, false, 40, true)).toBe(false);
    expect(leases.admit('key_1', 3)).toMatchObject({ kind: 'store', lease: 1 });
  });

  it('after a refused lease, checks each request at cost 1 until the bucket could hold a lease again', () => {
    const leases = new KeyLeases(100);
    leases.admit('key_1', 0);
    // Refused on the key: retry exactly.
    expect(leases.settle('key_1', 5, 0, false, 30)).toBe(true);
    expect(leases.admit('key_1', 10)).toMatchObject({ kind: 'store', lease: 1, check: { interval_ms: 10 } });
    expect(leases.settle('key_1', 1, 10, false, 5)).toBe(false);
    expect(leases.admit('key_1', 30)).toMatchObject({ kind: 'store', lease: 5 });
    // Refused on another limiter: no retry, the next request leases again.
    expect(leases.settle('key_1', 5, 30, false, null)).toBe(false);
    expect(leases.admit('key_1', 30)).toMatchObject({ kind: 'store', lease: 5 });
  });

  it('wakes waiters when the lease call fails', async () => {
    const leases = new KeyLeases(100);
    leases.admit('key_1', 0);
    const w = leases.admit('key_1', 0);
    if (w.kind !== 'wait') throw new Error('expected wait');
    leases.abandon('key_1', 5);
    await w.until;
    expect(leases.admit('key_1', 0)).toMatchObject({ kind: 'store', lease: 5 });
  });
});

describe.each(STORE_KINDS)('platform limit with leases (%s)', (kind) => {
  let rt: TestRuntime;
  const LIMIT = 100;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { keyRateLimit: LIMIT } });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
  });
  afterAll(() => rt.close());

  const decide = (key: string, app = rt.app) =>
    app.inject({ method: 'POST', url: '/v1/decisions', payload: { agent_id: 'lease-agent', action: 'orders.read' }, headers: { authorization: `Bearer ${key}` } });

  it('passes exactly the bucket one request after another, then refuses with the exact Retry-After; one interval later exactly one more passes', async () => {
    rt.clock.advance(10);
    const key = await rt.keyWith(['*']);
    const codes: number[] = [];
    for (let i = 0; i < LIMIT + 3; i++) {
      const r = i % 2 ? await decide(key) : await rt.call(key, { method: 'GET', url: '/v1/policies' });
      codes.push(r.statusCode);
    }
    expect(codes.filter((c) => c === 200)).toHaveLength(LIMIT);
    expect(codes.slice(LIMIT)).toEqual([429, 429, 429]);
    const refused = await decide(key);
    expect(refused.statusCode).toBe(429);
    expect(json(refused).error.message).toContain(`platform limit of ${LIMIT} requests per second`);
    expect(refused.headers['retry-after']).toBe('1');
    rt.clock.advance(1 / LIMIT);
    expect((await decide(key)).statusCode).toBe(200);
    expect((await decide(key)).statusCode).toBe(429);
  });

  it('concurrent requests share the leases: exactly the bucket passes', async () => {
    rt.clock.advance(10);
    const key = await rt.keyWith(['*']);
    const codes = (await Promise.all(Array.from({ length: LIMIT + 50 }, () => decide(key)))).map((r) => r.statusCode);
    expect(codes.filter((c) => c === 200)).toHaveLength(LIMIT);
    expect(codes.filter((c) => c === 429)).toHaveLength(50);
  });

  it('two processes on one store admit at most the bucket together, and at most a lease per process less', async () => {
    rt.clock.advance(10);
    const key = await rt.keyWith(['*']);
    const other = await openServices({ config: rt.services.config, store: rt.store, clock: rt.clock });
    const otherApp = await buildApp(other);
    try {
      const codes = (
        await Promise.all(Array.from({ length: LIMIT + 50 }, (_, i) => decide(key, i % 2 ? rt.app : otherApp)))
      ).map((r) => r.statusCode);
      const passed = codes.filter((c) => c === 200).length;
      expect(codes.every((c) => c === 200 || c === 429)).toBe(true);
      expect(passed).toBeLessThanOrEqual(LIMIT);
      // Each process may hold under 1.5 leases unused when the bucket runs dry (a lease ahead and half of one).
      expect(passed).toBeGreaterThanOrEqual(LIMIT - 2 * Math.ceil(1.5 * Math.floor(LIMIT / 20)));
    } finally {
      await otherApp.close();
      await other.limits.idle();
      await other.writer.idle();
    }
  });
});
