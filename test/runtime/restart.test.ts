/**
 * A restart loses nothing: policies, decisions, agent statuses, events and API
 * keys made before closing the runtime and its store are there after reopening
 * the same store, and decisions follow the stored policies. For PostgreSQL and
 * for the embedded store on disk (the one `authz serve` uses without
 * DATABASE_URL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../runtime/domain/accounts.js';
import { openStore, type StoreOptions } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { createTestDatabase, type StoreKind, type TestStore } from '../helpers/postgres.js';
import { json, START, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

interface Location {
  options: StoreOptions;
  remove(): Promise<void>;
}

async function newLocation(kind: StoreKind): Promise<Location> {
  if (kind === 'postgres') {
    const db = await createTestDatabase();
    return { options: { databaseUrl: db.url, max: 5 }, remove: () => db.drop() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'authz-restart-'));
  return { options: { dataDir: join(dir, 'data') }, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens and migrates the store at `location`, in the harness's TestStore shape (dispose = close). */
async function open(location: Location): Promise<{ store: TestStore; applied: string[] }> {
  const store = await openStore(location.options);
  let applied: string[];
  try {
    applied = await migrate(store.sql);
  } catch (err) {
    await store.close();
    throw err;
  }
  return { store: Object.assign(store, { dispose: () => store.close() }), applied };
}

describe.each(['postgres', 'embedded'] as const)('restart (%s store)', (kind) => {
  let location: Location | undefined;
  let rt: TestRuntime | undefined;
  let store: TestStore | undefined;

  afterAll(async () => {
    await rt?.close();
    await store?.close();
    await location?.remove();
  });

  it('keeps policies, decisions, agents, events and keys, and decides as before', async () => {
    location = await newLocation(kind);
    if (kind === 'embedded') expect(location.options.dataDir).not.toContain('://');

    // --- first life -------------------------------------------------------------
    ({ store } = await open(location));
    await createAccount(store.sql, 'main', new Date(START));
    rt = await startRuntime(kind, { store });
    const firstKey = rt.testKey;
    const call = (
      r: TestRuntime,
      key: string,
      method: 'GET' | 'POST' | 'PUT' | 'DELETE',
      url: string,
      payload?: object,
    ) => r.call(key, { method, url, ...(payload ? { payload } : {}) });

    const created: Array<JsonObject> = [];
    for (const body of [
      { name: 'read-orders', effect: 'allow', agents: ['bot-*'], actions: ['orders.read'], resources: ['order:*'] },
      { name: 'no-deletes', priority: 10, effect: 'deny', agents: ['bot-*'], actions: ['*.delete'] },
      { name: 'paused-refunds', state: 'disabled', effect: 'allow', actions: ['payments.refund'] },
      { name: 'review-exports', effect: 'review', actions: ['reports.export'] },
    ]) {
      const r = await call(rt, firstKey, 'POST', '/v1/policies', body);
      expect(r.statusCode).toBe(201);
      created.push(json(r));
    }
    // An update, so the stored version is not the created one.
    const updated = await call(rt, firstKey, 'PUT', `/v1/policies/${created[3]!.id}`, {
      name: 'review-exports',
      effect: 'review',
      actions: ['reports.export', 'reports.read'],
    });
    expect(updated.statusCode).toBe(200);
    created[3] = json(updated);

    const requests = [
      { agent_id: 'bot-1', action: 'orders.read', resource: 'order:1' },
      { agent_id: 'bot-1', action: 'orders.delete', resource: 'order:1' },
      { agent_id: 'bot-2', action: 'payments.refund', resource: 'order:2', amount: 5 },
      { agent_id: 'bot-3', action: 'reports.read' },
      { agent_id: 'bot-4', action: 'orders.read', resource: 'order:9' },
    ];
    const decisions: Array<JsonObject> = [];
    for (const payload of requests) {
      const r = await call(rt, firstKey, 'POST', '/v1/decisions', payload);
      expect(r.statusCode).toBe(200);
      decisions.push(json(r));
    }
    expect(decisions.map((d) => [d.effect, d.reason])).toEqual([
      ['allow', 'policy.matched'],
      ['deny', 'policy.matched'],
      ['deny', 'policy.disabled'],
      ['review', 'policy.matched'],
      ['allow', 'policy.matched'],
    ]);
    const confirmed = await call(rt, firstKey, 'POST', `/v1/decisions/${decisions[0]!.id}/confirm`, {});
    expect(confirmed.statusCode).toBe(200);
    expect(json(confirmed).status).toBe('confirmed');
    expect((await call(rt, firstKey, 'POST', '/v1/agents/bot-4/revoke')).statusCode).toBe(200);
    expect(json(await call(rt, firstKey, 'POST', '/v1/decisions', requests[4]!))).toMatchObject({
      effect: 'deny',
      reason: 'agent.revoked',
    });

    const before = {
      decisions: await Promise.all(
        decisions.map(async (d) => json(await call(rt!, firstKey, 'GET', `/v1/decisions/${d.id}`))),
      ),
      policies: json(await call(rt, firstKey, 'GET', '/v1/policies?limit=100')),
      bundle: json(await call(rt, firstKey, 'GET', '/v1/bundle')),
      events: json(await call(rt, firstKey, 'GET', '/v1/events?limit=100')),
      agents: json(await call(rt, firstKey, 'GET', '/v1/agents?limit=100')),
    };
    expect(before.policies.data).toHaveLength(4);
    expect(before.decisions[0]!.status).toBe('confirmed');

    // --- close everything ------------------------------------------------------
    await rt.close();
    rt = undefined;
    await store.close();
    store = undefined;

    // --- second life on the same store -----------------------------------------------
    const reopened = await open(location);
    store = reopened.store;
    expect(reopened.applied).toEqual([]); // migrations are recorded, not applied again
    rt = await startRuntime(kind, { store });
    expect(rt.accountId).toBe(before.events.data[0].account_id);

    for (const key of [firstKey, rt.testKey]) {
      for (const d of before.decisions) {
        const r = await call(rt, key, 'GET', `/v1/decisions/${d.id}`);
        expect(r.statusCode).toBe(200);
        expect(json(r)).toEqual(d);
      }
      expect(json(await call(rt, key, 'GET', '/v1/policies?limit=100'))).toEqual(before.policies);
      expect(json(await call(rt, key, 'GET', '/v1/bundle'))).toEqual(before.bundle);
      expect(json(await call(rt, key, 'GET', '/v1/events?limit=100'))).toEqual(before.events);
      expect(json(await call(rt, key, 'GET', '/v1/agents?limit=100'))).toEqual(before.agents);
    }
    // The create answer adds the lints of the moment (`warnings`); the stored policy is the rest.
    for (const { warnings: _lints, ...p } of created)
      expect(json(await call(rt, firstKey, 'GET', `/v1/policies/${p.id}`))).toEqual(p);

    // Decisions follow the stored policies (compiled from the store on first use).
    const again = [];
    for (const payload of requests) again.push(json(await call(rt, firstKey, 'POST', '/v1/decisions', payload)));
    expect(again.map((d) => [d.effect, d.reason, d.policy_id])).toEqual([
      ['allow', 'policy.matched', created[0]!.id],
      ['deny', 'policy.matched', created[1]!.id],
      ['deny', 'policy.disabled', null],
      ['review', 'policy.matched', created[3]!.id],
      ['deny', 'agent.revoked', null],
    ]);
    // The confirmed decision stays confirmed.
    const twice = await call(rt, firstKey, 'POST', `/v1/decisions/${decisions[0]!.id}/confirm`, {});
    expect(twice.statusCode).toBe(409);
    expect(json(twice).error.code).toBe('decision.already_confirmed');
    // Changes after the restart apply as before.
    const enable = await call(rt, firstKey, 'PUT', `/v1/policies/${created[2]!.id}`, {
      name: 'paused-refunds',
      state: 'enabled',
      effect: 'allow',
      actions: ['payments.refund'],
    });
    expect(enable.statusCode).toBe(200);
    expect(json(await call(rt, firstKey, 'POST', '/v1/decisions', requests[2]!))).toMatchObject({
      effect: 'allow',
      policy_id: created[2]!.id,
    });
    const events = json(await call(rt, firstKey, 'GET', '/v1/events?type=policy.updated&limit=100')).data;
    expect(events[0].data).toMatchObject({ change: 'enabled', policy: { id: created[2]!.id } });
  });

  it('keeps the history in the store: a restart in the middle of a window counts what was decided before it (docs/history.md)', async () => {
    await rt?.close();
    await store?.close();
    await location?.remove();
    location = await newLocation(kind);
    ({ store } = await open(location));
    await createAccount(store.sql, 'main', new Date(START));
    rt = await startRuntime(kind, { store });
    await rt.setPolicies([
      { id: 'pol_cap', effect: 'allow', actions: ['x.go'], condition: "history.count('x.go', '1h') < 3" },
    ]);
    const decide = async (r: TestRuntime) =>
      json(
        await r.call(r.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'bot', session_id: 'run-1', action: 'x.go' },
        }),
      );
    expect((await decide(rt)).effect).toBe('allow');
    expect((await decide(rt)).effect).toBe('allow');

    await rt.close();
    rt = undefined;
    await store.close();
    const reopened = await open(location);
    store = reopened.store;
    rt = await startRuntime(kind, { store });
    // 30 minutes later, on the same store: two earlier decisions in the window, one more allowed.
    rt.clock.advance(1800);
    const third = await decide(rt);
    expect([third.effect, third.metadata.history[0].value]).toEqual(['allow', 2]);
    expect((await decide(rt)).effect).toBe('deny');
    // Just past an hour after the first two (a decision exactly one window old still counts): only the third counts.
    rt.clock.advance(1801);
    const later = await decide(rt);
    expect([later.effect, later.metadata.history[0].value]).toEqual(['allow', 1]);
  }, 120_000);
});
