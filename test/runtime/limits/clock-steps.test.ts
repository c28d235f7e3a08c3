/**
 * Rate limits when clocks step and disagree (docs/budgets-and-limits.md, "Clock
 * steps and skew"), on both stores:
 *
 * - the service clock steps back (days, or seconds): every limiter used while it
 *   was ahead admits again within one interval, and a request sent Retry-After
 *   seconds after a 429 passes (before: 429 for as long as the step);
 * - the key leases (runtime/spend-limits/key-leases.ts) do not keep stale state across
 *   a step back;
 * - two processes on one store whose clocks are 2 s and 6 s apart each get their
 *   share of one key's limit (before: the slower one was refused);
 * - the test clock's offset is stored: a restart keeps the service's time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../runtime/app.js';
import { ManualClock, type RealTimeClock } from '../../../runtime/clock.js';
import { configFromEnv } from '../../../runtime/config.js';
import { RateLimitExceededError } from '../../../runtime/errors/api-error.js';
import { KeyLeases } from '../../../runtime/spend-limits/key-leases.js';
import { Limits } from '../../../runtime/spend-limits/limits.js';
import { openServices } from '../../../runtime/services.js';
import { openStore, type Store } from '../../../runtime/store/connect.js';
import type { Principal } from '../../../runtime/tenant.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../helpers/postgres.js';
import { ADMIN_TOKEN, json, START, startRuntime, type TestRuntime } from '../helpers/app.js';
import { agent, postDecision } from '../../helpers/kit.js';

const DAY_S = 86_400;

describe('key leases across a step back of the service clock', () => {
  const WEEK_MS = 7 * DAY_S * 1000;

  it('a lease taken while the clock was ahead lapses at once', () => {
    const leases = new KeyLeases(100);
    expect(leases.admit('key_1', WEEK_MS)).toMatchObject({ kind: 'store', lease: 5 });
    leases.settle('key_1', 5, WEEK_MS, true, null);
    expect(leases.admit('key_1', WEEK_MS).kind).toBe('local');
    // The clock steps back a week: the 3 tokens left are not spent for a week more.
    expect(leases.admit('key_1', 0)).toMatchObject({ kind: 'store', lease: 5 });
  });

  it('an exact spell begun while the clock was ahead ends at once', () => {
    const leases = new KeyLeases(100);
    leases.admit('key_1', WEEK_MS);
    expect(leases.settle('key_1', 5, WEEK_MS, false, 30)).toBe(true);
    expect(leases.admit('key_1', WEEK_MS + 10)).toMatchObject({ kind: 'store', lease: 1 });
    leases.settle('key_1', 1, WEEK_MS + 10, true, null);
    // Back a week: leases again rather than checking every request in the store for a week.
    expect(leases.admit('key_1', 0)).toMatchObject({ kind: 'store', lease: 5 });
  });
});

describe.each(STORE_KINDS)('a service clock that steps back (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt?.close());

  const statuses = async (n: number, body: Record<string, unknown>) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await postDecision(rt, body)).statusCode);
    return out;
  };
  /** A 429 now; the Retry-After it gives, in seconds. */
  const refusedFor = async (body: Record<string, unknown>) => {
    const r = await postDecision(rt, body);
    expect(r.statusCode, r.body).toBe(429);
    return Number(r.headers['retry-after']);
  };

  it('a step back of days: the limiter admits again within one interval; after Retry-After a request passes', async () => {
    // per_minute 3: one request every 20 s.
    await rt.setPolicies([
      { id: 'pol_days', effect: 'allow', actions: ['orders.read'], rate_limit: { per_minute: 3 } },
    ]);
    const body = { agent_id: agent('days'), action: 'orders.read' };
    rt.clock.set(START + 7 * DAY_S * 1000);
    expect(await statuses(3, body)).toEqual([200, 200, 200]);
    await refusedFor(body);

    rt.clock.set(START); // a restart without the test clock's offset, a restored snapshot, an NTP step
    const wait = await refusedFor(body);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(20);
    rt.clock.advance(wait);
    expect(await statuses(2, body)).toEqual([200, 429]);
    // From there the limiter runs as usual: one more every 20 s.
    rt.clock.advance(20);
    expect(await statuses(2, body)).toEqual([200, 429]);
  });

  it('a step back of seconds: admitted again after one interval, not after the step', async () => {
    await rt.setPolicies([
      { id: 'pol_secs', effect: 'allow', actions: ['orders.read'], rate_limit: { per_second: 5 } },
    ]);
    const body = { agent_id: agent('secs'), action: 'orders.read' };
    rt.clock.set(START + 10 * DAY_S * 1000);
    expect(await statuses(6, body)).toEqual([200, 200, 200, 200, 200, 429]);
    rt.clock.advance(-30);
    expect(await refusedFor(body)).toBe(1);
    rt.clock.advance(1);
    expect(await statuses(1, body)).toEqual([200]);
  });
});

describe.each(STORE_KINDS)('the platform limit across a step back (%s)', (kind) => {
  const LIMIT = 100;
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { keyRateLimit: LIMIT } });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
  });
  afterAll(() => rt?.close());

  it('a key used while the clock was a week ahead is refused for at most a second on every route, then passes', async () => {
    const key = await rt.keyWith(['*']);
    rt.clock.set(START + 7 * DAY_S * 1000);
    let status = 200;
    for (let i = 0; i <= LIMIT && status === 200; i++)
      status = (await rt.call(key, { method: 'GET', url: '/v1/policies' })).statusCode;
    expect(status).toBe(429);

    rt.clock.set(START);
    const routes = [
      { method: 'GET', url: '/v1/policies' },
      { method: 'GET', url: '/v1/events' },
      { method: 'POST', url: '/v1/decisions', payload: { agent_id: 'stepped', action: 'orders.read' } },
    ] as const;
    let wait = 0;
    for (const route of routes) {
      const r = await rt.call(key, route);
      if (r.statusCode === 429) wait = Math.max(wait, Number(r.headers['retry-after']));
      else expect(r.statusCode, r.body).toBe(200);
    }
    expect(wait).toBeLessThanOrEqual(1);
    rt.clock.advance(1);
    for (const route of routes) {
      const r = await rt.call(key, route);
      expect(r.statusCode, `${route.method} ${route.url}: ${r.body}`).toBe(200);
    }
  });
});

describe.each(STORE_KINDS)('two processes whose clocks disagree share one key limit (%s)', (kind) => {
  let store: TestStore;
  /** A second connection (a second process's pool) on PostgreSQL; the same store embedded (one process only). */
  let second: Store;
  beforeAll(async () => {
    store = await openTestStore(kind);
    second = kind === 'postgres' ? await openStore({ databaseUrl: store.url! }) : store;
  });
  afterAll(async () => {
    if (second !== store) await second?.close();
    await store?.dispose();
  });

  /** A system clock running `skewMs` behind real time, which believes it is right (a machine's clock). */
  const skewed = (skewMs: number): RealTimeClock => ({ now: () => Date.now() - skewMs, realTimeOffsetMs: () => 0 });
  const principal = (): Principal => ({
    keyId: `key_${agent('skew')}`,
    accountId: 'acc_skew',
    environment: 'test',
    scopes: ['*'],
  });
  const admitted = async (limits: Limits, p: Principal): Promise<boolean> => {
    try {
      await limits.admitKey(p);
      return true;
    } catch (e) {
      if (e instanceof RateLimitExceededError) return false;
      throw e;
    }
  };
  const pair = (perSecond: number, skewMs: number) => {
    const options = { keyRateLimit: perSecond, maxInFlight: kind === 'postgres' ? 4 : 1 };
    return [new Limits(store.sql, skewed(0), options), new Limits(second.sql, skewed(skewMs), options)] as const;
  };

  for (const skewMs of [2_000, 6_000]) {
    it(`${skewMs / 1000} s apart, well under the limit: neither process is refused`, async () => {
      // The case: 1,000/s per key, both processes together at most ~200/s.
      const [a, b] = pair(1_000, skewMs);
      const p = principal();
      const passed = { a: 0, b: 0 };
      for (let i = 0; i < 150; i++) {
        const [x, y] = await Promise.all([admitted(a, p), admitted(b, p)]);
        passed.a += Number(x);
        passed.b += Number(y);
        // Pacing, not settling: keeps the pair under 200 requests per second.
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await Promise.all([a.idle(), b.idle()]);
      expect(passed).toEqual({ a: 150, b: 150 });
    });

    it(`${skewMs / 1000} s apart, both past the limit: each gets a share`, async () => {
      const [a, b] = pair(100, skewMs);
      const p = principal();
      // Both ask at once, 150 times with no pause (far past 100/s): which of two concurrent bursts reaches the
      // store first is the machine's scheduling, not the clocks; asking in step leaves only the clocks to differ.
      let [passedA, passedB] = [0, 0];
      for (let i = 0; i < 150; i++) {
        const [x, y] = await Promise.all([admitted(a, p), admitted(b, p)]);
        passedA += Number(x);
        passedB += Number(y);
      }
      await Promise.all([a.idle(), b.idle()]);
      // A bucket of 100 (less what the leases leave unused), shared.
      expect(passedA + passedB).toBeGreaterThanOrEqual(90);
      expect(passedA).toBeGreaterThanOrEqual((passedA + passedB) / 5);
      expect(passedB).toBeGreaterThanOrEqual((passedA + passedB) / 5);
    });
  }

  it('a manual clock (tests) is still judged as it reads: the shared row follows it exactly', async () => {
    const clock = new ManualClock(START);
    const limits = new Limits(store.sql, clock, { keyRateLimit: 10, maxInFlight: 1 });
    const p = principal();
    const codes: boolean[] = [];
    for (let i = 0; i < 11; i++) codes.push(await admitted(limits, p));
    expect(codes.filter(Boolean)).toHaveLength(10);
    clock.advance(0.1);
    expect(await admitted(limits, p)).toBe(true);
    expect(await admitted(limits, p)).toBe(false);
    await limits.idle();
  });
});

describe.each(STORE_KINDS)('the test clock offset is stored (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(() => store?.dispose());

  const start = async () => {
    const services = await openServices({
      config: configFromEnv({ AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN, AUTHZ_TEST_CLOCK: '1' }),
      store,
    });
    const app = await buildApp(services);
    return {
      services,
      app,
      advance: (seconds: number) =>
        app.inject({
          method: 'POST',
          url: '/admin/clock',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          payload: { advance_seconds: seconds },
        }),
      async close() {
        await app.close();
        await services.limits.idle();
        await services.writer.idle();
      },
    };
  };

  it('a restart keeps the service time where POST /admin/clock left it, and further advances add to it', async () => {
    const first = await start();
    const r = await first.advance(7 * DAY_S);
    expect(r.statusCode, r.body).toBe(200);
    const leftAt = Date.parse(json(r).now);
    await first.close();

    const second = await start();
    try {
      // The week is still there (and real time has moved on a little since).
      expect(second.services.testClock!.realTimeOffsetMs()).toBe(7 * DAY_S * 1000);
      expect(second.services.clock.now()).toBeGreaterThanOrEqual(leftAt);
      const again = await second.advance(DAY_S);
      expect(again.statusCode, again.body).toBe(200);
      expect(second.services.testClock!.realTimeOffsetMs()).toBe(8 * DAY_S * 1000);
    } finally {
      await second.close();
    }
    const third = await start();
    try {
      expect(third.services.testClock!.realTimeOffsetMs()).toBe(8 * DAY_S * 1000);
      // The service time it answers is a day past where the first process left it.
      expect(Date.parse(json(await third.advance(0)).now)).toBeGreaterThanOrEqual(leftAt + DAY_S * 1000);
    } finally {
      await third.close();
    }
  });
});
