/**
 * The platform limit per API key with per-process leases (runtime/spend-limits/key-leases.ts):
 * the state machine alone, then over HTTP on both stores with a clock that stands
 * still, so every count is exact: a burst passes exactly the bucket, refusals carry
 * the exact Retry-After, concurrent requests share one lease, and two processes on
 * one store never admit more than the bucket together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../runtime/app.js';
import { KeyLeases, LEASE_LIFETIME_MS } from '../../../runtime/spend-limits/key-leases.js';
import { openServices } from '../../../runtime/services.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from '../helpers/app.js';
import { callerOf, postDecision } from '../../helpers/kit.js';

/** 100/s: leases of 5, the next asked for at 2 left; one lease taken at 0 and 2 of its 4 spent, so 2 are left. */
function twoLeftOfALease(): KeyLeases {
  const leases = new KeyLeases(100);
  leases.admit('key_1', 0);
  leases.settle('key_1', 5, 0, true, null);
  leases.admit('key_1', 0);
  leases.admit('key_1', 0);
  return leases;
}

describe('KeyLeases', () => {
  it('checks every request in the store when a lease would be a single token', () => {
    const leases = new KeyLeases(39);
    expect(leases.leaseSize).toBe(1);
    const a = leases.admit('key_1', 0);
    expect(a).toMatchObject({
      kind: 'store',
      lease: 1,
      check: { key: 'key:key_1', interval_ms: 1000 / 39, window_ms: 1000 },
    });
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
    expect(first).toMatchObject({
      kind: 'store',
      lease: 5,
      check: { key: 'key:key_1', interval_ms: 50, window_ms: 1000 },
    });
    // A second request while the lease is in the store waits for it.
    const waiting = leases.admit('key_1', 0);
    expect(waiting.kind).toBe('wait');
    expect(leases.settle('key_1', 5, 0, true, null)).toBe(false);
    for (let i = 0; i < 2; i++) expect(leases.admit('key_1', 1).kind).toBe('local');
    expect(leases.admit('key_1', 1)).toMatchObject({ kind: 'store', lease: 5 });
    leases.settle('key_1', 5, 1, true, null);
    // Unused tokens lapse with the lease.
    expect(leases.admit('key_1', 1 + LEASE_LIFETIME_MS)).toMatchObject({ kind: 'store', lease: 5 });
  });

  it('asks for the next lease ahead, at a quarter of a lease left, while the others spend the rest', () => {
    const leases = new KeyLeases(100);
    expect([leases.leaseSize, leases.lowWater]).toEqual([5, 2]);
    leases.admit('key_1', 0);
    leases.settle('key_1', 5, 0, true, null);
    // 4 tokens held: two spent locally, then the request finding 2 left carries the next lease.
    expect(leases.admit('key_1', 1).kind).toBe('local');
    expect(leases.admit('key_1', 1).kind).toBe('local');
    expect(leases.admit('key_1', 1)).toMatchObject({ kind: 'store', lease: 5 });
    // Meanwhile the 2 left are spent, and only then does a request wait.
    expect(leases.admit('key_1', 2).kind).toBe('local');
    expect(leases.admit('key_1', 2).kind).toBe('local');
    expect(leases.admit('key_1', 2).kind).toBe('wait');
    leases.settle('key_1', 5, 1, true, null);
    for (let i = 0; i < 2; i++) expect(leases.admit('key_1', 3).kind).toBe('local');
    expect(leases.admit('key_1', 3)).toMatchObject({ kind: 'store', lease: 5 });
  });

  it('spends what is left of a lease first, each lease lapsing on its own span', () => {
    const leases = twoLeftOfALease();
    // The lease asked ahead at 500 ms comes back with 2 of the first lease unspent.
    expect(leases.admit('key_1', 500)).toMatchObject({ kind: 'store', lease: 5 });
    leases.settle('key_1', 5, 500, true, null);
    // Past the first lease's lapse its 2 are gone; the second's 4 are spent (the 2nd of them asks ahead again).
    const at = LEASE_LIFETIME_MS + 1;
    expect(leases.admit('key_1', at).kind).toBe('local');
    expect(leases.admit('key_1', at).kind).toBe('local');
    expect(leases.admit('key_1', at)).toMatchObject({ kind: 'store', lease: 5 });
    expect(leases.admit('key_1', at).kind).toBe('local');
    expect(leases.admit('key_1', at).kind).toBe('local');
    expect(leases.admit('key_1', at).kind).toBe('wait');
  });

  it("before the first lease lapses, its tokens are spent before the next lease's", () => {
    const leases = twoLeftOfALease();
    leases.admit('key_1', 10); // asks ahead with 2 left
    leases.settle('key_1', 5, 10, true, null);
    // 2 + 4 held: 4 spent locally (the first lease's 2, then 2 of the second), then ahead again at 2 left.
    for (let i = 0; i < 4; i++) expect(leases.admit('key_1', 20).kind).toBe('local');
    expect(leases.admit('key_1', 20)).toMatchObject({ kind: 'store', lease: 5 });
    // The second lease's 2 left lapse at its own end (10 + lifetime), not the first's.
    expect(leases.admit('key_1', LEASE_LIFETIME_MS + 5).kind).toBe('local');
    expect(leases.admit('key_1', LEASE_LIFETIME_MS + 11).kind).toBe('wait');
  });

  it('a refused lease asked ahead: the tokens left are spent, then each request is checked at cost 1', () => {
    const leases = twoLeftOfALease();
    expect(leases.admit('key_1', 0)).toMatchObject({ kind: 'store', lease: 5 });
    expect(leases.settle('key_1', 5, 0, false, 30)).toBe(true);
    expect(leases.admit('key_1', 1).kind).toBe('local');
    expect(leases.admit('key_1', 1).kind).toBe('local');
    expect(leases.admit('key_1', 1)).toMatchObject({ kind: 'store', lease: 1 });
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
    postDecision(callerOf(app, key), { agent_id: 'lease-agent', action: 'orders.read' });

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
      // Each process may hold at most lease - 1 + the low-water mark unused tokens when the bucket runs dry.
      const { leaseSize, lowWater } = new KeyLeases(LIMIT);
      expect(passed).toBeGreaterThanOrEqual(LIMIT - 2 * (leaseSize - 1 + lowWater));
    } finally {
      await otherApp.close();
      await other.limits.idle();
      await other.writer.idle();
    }
  });
});
