/**
 * Recompiling with per-policy reuse (runtime/domain/policy-compile-cache.ts) and
 * the change path that reuses this process's set when it is the stored one: the
 * hash is byte for byte the bundle's, the table answers as one compiled from
 * scratch, and a process whose set is stale never drops another process's change.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePolicySet } from '../../../bench/compiler/generate.js';
import { policySetHash } from '../../../compiler/bundle/write.js';
import { evaluate } from '../../../compiler/table/evaluate.js';
import type { Policy } from '../../../compiler/policy/types.js';
import { buildApp } from '../../../runtime/app.js';
import { compileStored } from '../../../runtime/domain/policy-sets.js';
import { PolicyCompileCache } from '../../../runtime/domain/policy-compile-cache.js';
import { openServices } from '../../../runtime/services.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from '../helpers/app.js';
import { callerOf, postDecision } from '../../helpers/kit.js';

describe('PolicyCompileCache', () => {
  it('hashes exactly as policySetHash, for any subset and order, cached or not', () => {
    const { policies } = generatePolicySet(300, 7);
    const cache = new PolicyCompileCache();
    fc.assert(
      fc.property(fc.shuffledSubarray(policies), (subset) => {
        expect(cache.hash(subset)).toBe(policySetHash(subset));
      }),
      { numRuns: 50 },
    );
  });

  it('after a one-policy change, answers every request as a set compiled from scratch', () => {
    const { policies, requests } = generatePolicySet(500, 3);
    const cache = new PolicyCompileCache();
    cache.compile(policies);
    const changed: Policy[] = policies.map((p, i) =>
      i === 17 ? { ...p, effect: p.effect === 'deny' ? 'allow' : 'deny', priority: 1 } : p,
    );
    const cached = cache.compile(changed).table!;
    const fresh = compileStored(changed).table!;
    for (const r of requests) expect(evaluate(cached, r)).toEqual(evaluate(fresh, r));
  });
});

describe('sliced recompile', () => {
  it('gives the event loop back while it builds, and builds the same table as the straight run', async () => {
    const { policies, requests } = generatePolicySet(3000, 5);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const sliced = (await new PolicyCompileCache().compileSliced(policies, 0)).table!;
    clearInterval(timer);
    // A slice budget of 0 ms pauses at every step: timers ran while it built.
    expect(ticks).toBeGreaterThan(5);
    const straight = new PolicyCompileCache().compile(policies).table!;
    expect(sliced.rows.map((r) => r.policy.id)).toEqual(straight.rows.map((r) => r.policy.id));
    for (const r of requests) expect(evaluate(sliced, r)).toEqual(evaluate(straight, r));
  });
});

describe.each(STORE_KINDS)('policy changes reuse the set this process holds (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  it('a change through a process whose set is stale keeps the change made through another', async () => {
    const other = await openServices({ config: rt.services.config, store: rt.store, clock: rt.clock });
    const otherApp = await buildApp(other);
    const create = (app: typeof rt.app, name: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/policies',
        headers: { authorization: `Bearer ${rt.testKey}` },
        payload: { name, effect: 'allow', actions: [`${name}.run`] },
      });
    const decide = (app: typeof rt.app, action: string) =>
      postDecision(callerOf(app, rt.testKey), { agent_id: 'a1', action });
    try {
      expect((await create(rt.app, 'first')).statusCode).toBe(201);
      // The other process loads the set (version 1), then this one moves on to version 2.
      expect(json(await decide(otherApp, 'first.run')).effect).toBe('allow');
      expect((await create(rt.app, 'second')).statusCode).toBe(201);
      // The other process's set is stale (no replication running here): its change must read the store.
      expect((await create(otherApp, 'third')).statusCode).toBe(201);
      // This process holds version 2, the store has 3: its next change must not drop "third".
      expect((await create(rt.app, 'fourth')).statusCode).toBe(201);
      const listed = (await rt.getOk('/v1/policies?limit=100')).data.map((p: Policy) => p.name).sort();
      expect(listed).toEqual(['first', 'fourth', 'second', 'third']);
      for (const action of ['first.run', 'second.run', 'third.run', 'fourth.run'])
        expect(json(await decide(rt.app, action)).effect).toBe('allow');
      const bundle = await rt.getOk('/v1/bundle');
      const stored = (await rt.getOk('/v1/policies?limit=100')).data.map((p: Record<string, unknown>) => {
        const { object: _o, livemode: _l, created_at: _c, updated_at: _u, ...policy } = p;
        return policy as unknown as Policy;
      });
      expect(bundle.hash).toBe(policySetHash(stored));
    } finally {
      await otherApp.close();
      await other.writer.idle();
    }
  });
});

describe.each(STORE_KINDS)('a one-policy change patches the table this process holds (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  it('POST, PUT, state changes (shadow included) and DELETE keep the unchanged rows and decide as a table compiled from scratch', async () => {
    const { policies, requests } = generatePolicySet(400, 11);
    await rt.setPolicies(policies);
    const set = async () => rt.services.policySets.get(rt.accountId, 'test');
    const target = policies[7]!;
    const { id: _id, ...body } = target;
    const steps: Array<() => Promise<number>> = [
      async () =>
        (
          await rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/policies',
            payload: { name: 'extra', priority: 3, effect: 'deny', actions: ['ns1.*'], agents: ['agent-0000*'] },
          })
        ).statusCode,
      async () =>
        (
          await rt.call(rt.testKey, {
            method: 'PUT',
            url: `/v1/policies/${target.id}`,
            payload: { ...body, effect: 'deny', priority: 1 },
          })
        ).statusCode,
      async () =>
        (
          await rt.call(rt.testKey, {
            method: 'PUT',
            url: `/v1/policies/${target.id}`,
            payload: { ...body, state: 'shadow' },
          })
        ).statusCode,
      async () =>
        (
          await rt.call(rt.testKey, {
            method: 'PUT',
            url: `/v1/policies/${target.id}`,
            payload: { ...body, state: 'disabled' },
          })
        ).statusCode,
      async () => (await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/policies/${target.id}` })).statusCode,
    ];
    for (const step of steps) {
      const before = await set();
      expect(await step()).toBeLessThan(300);
      const after = await set();
      expect(after.version).toBe(before.version + 1);
      // Patched, not rebuilt: the rows of the policies that did not change are the same objects.
      const beforeRows = new Set(before.table.rows);
      const kept = after.table.rows.filter((r) => beforeRows.has(r));
      expect(kept.length).toBeGreaterThanOrEqual(before.table.rows.length - 1);
      // And it decides as the same policies compiled from scratch, shadow outcomes included.
      const fresh = compileStored(after.policies).table!;
      expect(after.table.rows.map((r) => r.policy.id)).toEqual(fresh.rows.map((r) => r.policy.id));
      for (const r of requests.slice(0, 200)) expect(evaluate(after.table, r)).toEqual(evaluate(fresh, r));
    }
  });
});

describe.each(STORE_KINDS)('another process refreshing after a change patches its table too (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  it('keeps the rows of the unchanged policies and decides as the stored set compiled from scratch', async () => {
    const { policies, requests } = generatePolicySet(300, 13);
    await rt.setPolicies(policies);
    const other = await openServices({ config: rt.services.config, store: rt.store, clock: rt.clock });
    try {
      const target = policies[5]!;
      const { id: _id, ...body } = target;
      for (const payload of [
        { ...body, effect: 'deny', priority: 2 },
        { ...body, state: 'shadow' },
      ]) {
        const before = await other.policySets.get(rt.accountId, 'test');
        const put = await rt.call(rt.testKey, { method: 'PUT', url: `/v1/policies/${target.id}`, payload });
        expect(put.statusCode).toBe(200);
        const mine = await rt.services.policySets.get(rt.accountId, 'test');
        await other.policySets.refresh(rt.accountId, 'test', mine.version);
        const after = await other.policySets.get(rt.accountId, 'test');
        expect([after.version, after.hash]).toEqual([mine.version, mine.hash]);
        const beforeRows = new Set(before.table.rows);
        expect(after.table.rows.filter((r) => beforeRows.has(r)).length).toBe(before.table.rows.length - 1);
        const fresh = compileStored(after.policies).table!;
        for (const r of requests.slice(0, 200)) expect(evaluate(after.table, r)).toEqual(evaluate(fresh, r));
      }
    } finally {
      await other.writer.idle();
    }
  });
});
