/**
 * Agents over HTTP: implicit registration (agent.registered exactly once, even
 * under concurrency), GET /v1/agents[/:agent_id], revoke (agent.revoked) and
 * restore, 404 agent.not_found, and the agents:read / agents:write scopes.
 */
import { registrationEvent } from '../../runtime/events/build.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDecisionBatch, type NewAgent } from '../../runtime/store/decisions.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { START, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EventItem, type ListedItem, agent, expectError, postDecision } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let seq = 0;
const path = (agentId: string) => `/v1/agents/${encodeURIComponent(agentId)}`;

describe.each(STORE_KINDS)('agents over HTTP (%s)', (kind) => {
  let rt: TestRuntime;

  const decide = (agentId: string, key = rt.testKey, action = 'orders.read') =>
    postDecision(rt, { agent_id: agentId, action }, key);
  const get = (url: string, key = rt.testKey) => rt.call(key, { method: 'GET', url });
  const post = (url: string, key = rt.testKey) => rt.call(key, { method: 'POST', url });
  /** Every event of a type concerning this agent (data.agent_id), newest first. */
  const eventsFor = async (type: string, agentId: string, key = rt.testKey) => {
    const found: Array<JsonObject> = [];
    let after: string | undefined;
    for (;;) {
      const r = await get(`/v1/events?type=${type}&limit=100${after ? `&starting_after=${after}` : ''}`, key);
      expect(r.statusCode, r.body).toBe(200);
      const page = json(r);
      found.push(...page.data.filter((e: EventItem) => e.data.agent_id === agentId));
      if (!page.has_more) return found;
      after = page.data.at(-1).id;
    }
  };

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }], 'live');
  });
  afterAll(() => rt.close());

  it('an agent is registered implicitly by its first decision, with agent.registered', async () => {
    const a = agent('implicit');
    expectError(await get(path(a)), 404, 'agent.not_found');
    expect(await eventsFor('agent.registered', a)).toEqual([]);

    const at = new Date(rt.clock.now()).toISOString();
    expect((await decide(a)).statusCode).toBe(200);
    const r = await get(path(a));
    expect(r.statusCode, r.body).toBe(200);
    const body = json(r);
    expect(body).toMatchObject({ agent_id: a, status: 'active', first_seen_at: at, revoked_at: null });
    expect(body.first_seen_at).toMatch(ISO_MS);

    const events = await eventsFor('agent.registered', a);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'agent.registered',
      account_id: rt.accountId,
      created_at: at,
      data: { agent_id: a },
    });
    expect(events[0]!.id).toMatch(/^evt_/);
    expect(events[0]!.data.agent).toMatchObject({ agent_id: a, status: 'active', first_seen_at: at, revoked_at: null });

    // Later decisions neither re-register nor move first_seen_at.
    rt.clock.advance(30);
    expect((await decide(a)).statusCode).toBe(200);
    expect(json(await get(path(a))).first_seen_at).toBe(at);
    expect(await eventsFor('agent.registered', a)).toHaveLength(1);
  });

  it('a denied first request registers the agent too', async () => {
    const a = agent('denied-first');
    const d = await decide(a, rt.testKey, 'nothing.matches');
    expect(json(d)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
    expect(json(await get(path(a))).status).toBe('active');
    expect(await eventsFor('agent.registered', a)).toHaveLength(1);
  });

  it('agent.registered fires exactly once under 30 concurrent first requests', async () => {
    const a = agent('burst');
    const rs = await Promise.all(Array.from({ length: 30 }, () => decide(a)));
    expect(rs.map((r) => r.statusCode)).toEqual(Array(30).fill(200));
    expect(new Set(rs.map((r) => json(r).id)).size).toBe(30);
    expect(await eventsFor('agent.registered', a)).toHaveLength(1);
    const listed = json(await get(`/v1/decisions?agent_id=${encodeURIComponent(a)}&limit=100`));
    expect(listed.data).toHaveLength(30);
    expect(json(await get(path(a))).status).toBe('active');
  });

  it('many new agents at once, in shuffled order: each registered exactly once, no request fails', async () => {
    const agents = Array.from({ length: 25 }, () => agent('crowd'));
    const requests: string[] = [];
    for (let round = 0; round < 8; round++) {
      const order = [...agents];
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      requests.push(...(round % 2 ? order.reverse() : order));
    }
    const rs = await Promise.all(requests.map((a) => decide(a)));
    const failures = rs.filter((r) => r.statusCode !== 200).map((r) => r.body);
    expect(failures).toEqual([]);
    for (const a of agents) expect(await eventsFor('agent.registered', a), a).toHaveLength(1);
  });

  it('batches written at once that register the same new agents in opposite orders do not deadlock', async () => {
    // The decision writer runs several batches at once on PostgreSQL; each batch
    // registers its new agents in one statement.
    const ids = Array.from({ length: 300 }, () => agent('lockorder'));
    const rows = (list: string[]): NewAgent[] =>
      list.map((agent_id) => ({
        account_id: rt.accountId,
        environment: 'test',
        agent_id,
        first_seen_at: new Date(START),
      }));
    const sql = rt.store.sql;
    const written = await Promise.all([
      writeDecisionBatch(sql, [], [], rows(ids), rows(ids).map(registrationEvent)),
      writeDecisionBatch(sql, [], [], rows([...ids].reverse()), rows([...ids].reverse()).map(registrationEvent)),
      writeDecisionBatch(
        sql,
        [],
        [],
        rows([...ids.slice(150), ...ids.slice(0, 150)]),
        rows([...ids.slice(150), ...ids.slice(0, 150)]).map(registrationEvent),
      ),
    ]);
    // Every agent registered by exactly one of them.
    const all = written.flatMap((set) => [...set]);
    expect(all).toHaveLength(ids.length);
    expect(new Set(all).size).toBe(ids.length);
    for (const a of ids.slice(0, 3)) expect(await eventsFor('agent.registered', a)).toHaveLength(1);
  });

  it('the same agent id registers separately per environment and per account', async () => {
    const a = agent('envs');
    const rs = await Promise.all([
      ...Array.from({ length: 5 }, () => decide(a, rt.testKey)),
      ...Array.from({ length: 5 }, () => decide(a, rt.liveKey)),
      ...Array.from({ length: 5 }, () => decide(a, rt.otherKey)),
    ]);
    expect(rs.map((r) => r.statusCode)).toEqual(Array(15).fill(200));
    expect(await eventsFor('agent.registered', a, rt.testKey)).toHaveLength(1);
    expect(await eventsFor('agent.registered', a, rt.liveKey)).toHaveLength(1);
    expect(await eventsFor('agent.registered', a, rt.otherKey)).toHaveLength(1);
    const live = json(await get(path(a), rt.liveKey));
    expect(live).toMatchObject({ agent_id: a, status: 'active', livemode: true });
  });

  it('GET /v1/agents: a list of agent records, newest first, paginated', async () => {
    const made = [agent('list'), agent('list'), agent('list')];
    for (const a of made) {
      expect((await decide(a)).statusCode).toBe(200);
      rt.clock.advance(1);
    }
    const r = await get('/v1/agents?limit=3');
    expect(r.statusCode, r.body).toBe(200);
    const page = json(r);
    expect(page.object).toBe('list');
    expect(page.has_more).toBe(true);
    expect(page.data.map((x: ListedItem) => x.agent_id)).toEqual([...made].reverse());
    for (const x of page.data) {
      for (const f of ['agent_id', 'status', 'first_seen_at', 'revoked_at']) expect(x).toHaveProperty(f);
      expect(x.status).toBe('active');
      expect(x.first_seen_at).toMatch(ISO_MS);
      expect(x.revoked_at).toBeNull();
    }
    const next = json(await get(`/v1/agents?limit=2&starting_after=${encodeURIComponent(made[1]!)}`));
    expect(next.data[0].agent_id).toBe(made[0]);
    expect(next.has_more).toBe(true);
    for (const q of ['limit=0', 'limit=101'])
      expectError(await get(`/v1/agents?${q}`), 400, 'validation.invalid_field');
  });

  it('agent ids with any characters, up to 256 of them, work in paths', async () => {
    for (const a of [
      `${agent('odd')}/with slash?and#hash%`,
      `${agent('uni')}-é-😀`,
      `long-${'x'.repeat(150)}-${++seq}`,
      `${++seq}-${'y'.repeat(250)}`.slice(0, 256),
      Array.from(`${++seq}-${'😀'.repeat(256)}`)
        .slice(0, 256)
        .join(''),
    ]) {
      expect((await decide(a)).statusCode).toBe(200);
      const r = await get(path(a));
      expect(r.statusCode, r.body.slice(0, 200)).toBe(200);
      expect(json(r).agent_id).toBe(a);
      const rv = await post(`${path(a)}/revoke`);
      expect(rv.statusCode, rv.body.slice(0, 200)).toBe(200);
      expect(json(rv)).toMatchObject({ agent_id: a, status: 'revoked' });
    }
    expectError(await get(path('z'.repeat(257))), 400, 'validation.invalid_field');
  });

  it('revoke fires agent.revoked (data.agent_id, data.agent) and is idempotent; restore lifts it', async () => {
    const a = agent('revoke');
    expect((await decide(a)).statusCode).toBe(200);
    rt.clock.advance(5);
    const at = new Date(rt.clock.now()).toISOString();
    const r1 = await post(`${path(a)}/revoke`);
    expect(r1.statusCode, r1.body).toBe(200);
    expect(json(r1)).toMatchObject({ agent_id: a, status: 'revoked', revoked_at: at });
    expect(json(await get(path(a)))).toMatchObject({ agent_id: a, status: 'revoked', revoked_at: at });

    let revoked = await eventsFor('agent.revoked', a);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      type: 'agent.revoked',
      account_id: rt.accountId,
      created_at: at,
      data: { agent_id: a },
    });
    expect(revoked[0]!.id).toMatch(/^evt_/);
    expect(revoked[0]!.data.agent).toMatchObject({ agent_id: a, status: 'revoked', revoked_at: at });

    // Idempotent: same record, no second event.
    rt.clock.advance(5);
    const r2 = await post(`${path(a)}/revoke`);
    expect(r2.statusCode, r2.body).toBe(200);
    expect(json(r2)).toMatchObject({ agent_id: a, status: 'revoked', revoked_at: at });
    expect(await eventsFor('agent.revoked', a)).toHaveLength(1);

    // Concurrent revokes of an already revoked agent: still no event.
    const again = await Promise.all(Array.from({ length: 5 }, () => post(`${path(a)}/revoke`)));
    expect(again.map((r) => r.statusCode)).toEqual(Array(5).fill(200));
    expect(await eventsFor('agent.revoked', a)).toHaveLength(1);

    expect(json(await decide(a))).toMatchObject({ effect: 'deny', reason: 'agent.revoked' });

    const restored = await post(`${path(a)}/restore`);
    expect(restored.statusCode, restored.body).toBe(200);
    expect(json(restored)).toMatchObject({ agent_id: a, status: 'active', revoked_at: null });
    expect(json(await get(path(a)))).toMatchObject({ status: 'active', revoked_at: null });
    const restoredTwice = await post(`${path(a)}/restore`);
    expect(restoredTwice.statusCode).toBe(200);
    expect(json(restoredTwice).status).toBe('active');
    expect(json(await decide(a))).toMatchObject({ effect: 'allow', reason: 'policy.matched' });
    // Restoring fires no agent.revoked; revoking again fires a second one.
    expect(await eventsFor('agent.revoked', a)).toHaveLength(1);
    expect((await post(`${path(a)}/revoke`)).statusCode).toBe(200);
    revoked = await eventsFor('agent.revoked', a);
    expect(revoked).toHaveLength(2);
  });

  it('concurrent first revokes fire agent.revoked exactly once', async () => {
    const a = agent('revoke-race');
    expect((await decide(a)).statusCode).toBe(200);
    const rs = await Promise.all(Array.from({ length: 10 }, () => post(`${path(a)}/revoke`)));
    expect(rs.map((r) => r.statusCode)).toEqual(Array(10).fill(200));
    expect(await eventsFor('agent.revoked', a)).toHaveLength(1);
  });

  it('unknown agents, and agents of another account or environment: 404 agent.not_found', async () => {
    const unknown = agent('unknown');
    expectError(await get(path(unknown)), 404, 'agent.not_found');
    expectError(await post(`${path(unknown)}/revoke`), 404, 'agent.not_found');
    expectError(await post(`${path(unknown)}/restore`), 404, 'agent.not_found');
    // Revoking an unknown agent does not create it.
    expectError(await get(path(unknown)), 404, 'agent.not_found');

    const mine = agent('mine');
    expect((await decide(mine)).statusCode).toBe(200);
    for (const key of [rt.otherKey, rt.liveKey]) {
      expectError(await get(path(mine), key), 404, 'agent.not_found');
      expectError(await post(`${path(mine)}/revoke`, key), 404, 'agent.not_found');
      const list = json(await get('/v1/agents?limit=100', key));
      expect(list.data.map((x: ListedItem) => x.agent_id)).not.toContain(mine);
    }
    expect(json(await get(path(mine))).status).toBe('active');
    expect(await eventsFor('agent.revoked', mine)).toEqual([]);
  });

  it('scopes: agents:read reads, agents:write revokes and restores, neither does the other', async () => {
    const a = agent('scopes');
    expect((await decide(a)).statusCode).toBe(200);
    const reader = await rt.keyWith(['agents:read']);
    const writer = await rt.keyWith(['agents:write']);
    const other = await rt.keyWith(['decisions:write', 'decisions:read', 'events:read']);

    expect((await get(path(a), reader)).statusCode).toBe(200);
    expect((await get('/v1/agents', reader)).statusCode).toBe(200);
    expectError(await post(`${path(a)}/revoke`, reader), 403, 'auth.scope_insufficient');
    expectError(await post(`${path(a)}/restore`, reader), 403, 'auth.scope_insufficient');

    expectError(await get(path(a), writer), 403, 'auth.scope_insufficient');
    expectError(await get('/v1/agents', writer), 403, 'auth.scope_insufficient');
    expect((await post(`${path(a)}/revoke`, writer)).statusCode).toBe(200);
    expect((await post(`${path(a)}/restore`, writer)).statusCode).toBe(200);

    for (const [method, url] of [
      ['GET', path(a)],
      ['GET', '/v1/agents'],
      ['POST', `${path(a)}/revoke`],
      ['POST', `${path(a)}/restore`],
    ] as const) {
      expectError(await rt.call(other, { method, url }), 403, 'auth.scope_insufficient');
    }
    // A scope failure on an unknown agent is still 403 (scope before existence).
    expectError(await get(path(agent('nobody')), writer), 403, 'auth.scope_insufficient');
    expect(json(await get(path(a))).status).toBe('active');
  });
});
