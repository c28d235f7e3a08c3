/**
 * Decision events derived from their decisions (issue 51, migration 025), on
 * both stores: a decision.allow / decision.deny event has an `events` row only
 * when an enabled endpoint subscribes to its type (the row its deliveries name,
 * id `evt_` + the decision id's suffix), yet GET /v1/events lists and finds
 * every one; a subscribed event is delivered exactly once, whichever statement
 * wrote its decision (the decision writer, or authz_decide_batch with limits);
 * and paging over a log of every kind (events rows, derived events, their
 * anchors, by-reference rows of decisions written before the migration) is
 * exact for any page sizes and type filter.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../runtime/ids.js';
import { derivedEventId } from '../../runtime/store/events.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { decide } from '../helpers/kit.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

interface Listed {
  id: string;
  type: string;
  created_at: string;
  data: JsonObject;
}

/** A receiver on 127.0.0.1 that answers 204 and keeps every body. */
async function startReceiver(): Promise<{ url: string; bodies: JsonObject[]; close(): Promise<void> }> {
  const bodies: JsonObject[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as JsonObject);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    bodies,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A small seeded generator (mulberry32): the same page sizes on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The account's events rows of decision.allow / decision.deny. */
const decisionRows = (rt: TestRuntime) =>
  rt.store.sql<Array<{ id: string; type: string; decision_id: string | null; has_data: boolean }>>`
    select id, type, decision_id, data is not null as has_data from events
    where account_id = ${rt.accountId} and type in ('decision.allow', 'decision.deny') order by id`;

/** Every page of GET /v1/events (`type` optional), `limits()` the size of each. */
async function walk(rt: TestRuntime, limits: () => number, type?: string): Promise<Listed[]> {
  const out: Listed[] = [];
  let after: string | null = null;
  for (;;) {
    const q = new URLSearchParams({ limit: String(limits()) });
    if (type) q.set('type', type);
    if (after) q.set('starting_after', after);
    const page = await rt.getOk<{ data: Listed[]; has_more: boolean }>(`/v1/events?${q}`);
    out.push(...page.data);
    if (!page.has_more) return out;
    expect(page.data.length).toBeGreaterThan(0);
    after = page.data.at(-1)!.id;
  }
}

const POLICIES = [
  { effect: 'allow' as const, actions: ['orders.read'] },
  { effect: 'review' as const, actions: ['orders.read'], resources: ['order:vip-*'] },
  { effect: 'deny' as const, actions: ['orders.delete'] },
  {
    effect: 'allow' as const,
    actions: ['orders.pay'],
    budget: { unit: 'calls', limit: 1000, period: 'daily' as const },
  },
];

describe.each(STORE_KINDS)('derived decision events (%s)', (kind) => {
  let rt: TestRuntime;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    receiver = await startReceiver();
    await rt.setPolicies(POLICIES);
  });
  afterAll(async () => {
    await rt.close();
    await receiver.close();
  });

  it('a decision no endpoint subscribes to writes no events row, yet is listed and found by its derived id', async () => {
    const allow = await decide(rt, { agent_id: 'quiet', action: 'orders.read', resource: 'order:1' });
    const deny = await decide(rt, { agent_id: 'quiet', action: 'orders.delete' });
    expect(await decisionRows(rt)).toEqual([]);

    for (const d of [allow, deny]) {
      const id = derivedEventId(d.id);
      const listed = (await walk(rt, () => 100, `decision.${d.effect}`)).filter((e) => e.data.decision.id === d.id);
      expect(listed.map((e) => e.id)).toEqual([id]);
      const { permit_token: _token, ...asDecided } = d as unknown as JsonObject;
      expect(listed[0]).toMatchObject({ type: `decision.${d.effect}`, created_at: d.evaluated_at });
      expect(listed[0]!.data.decision).toEqual(asDecided);
      expect(await rt.getOk(`/v1/events/${id}`)).toEqual(listed[0]);
    }
    // An id of the derived form whose decision does not exist, and a decision's own id: no event.
    for (const missing of [derivedEventId(newId('dec', rt.clock.now())), allow.id])
      expect((await rt.call(rt.testKey, { method: 'GET', url: `/v1/events/${missing}` })).statusCode).toBe(404);
    // Another account sees none of them.
    const other = await rt.call(rt.otherKey, { method: 'GET', url: `/v1/events/${derivedEventId(allow.id)}` });
    expect(other.statusCode).toBe(404);
  });

  it('a subscribed type gets one events row and one delivery per decision, from either write path', async () => {
    const endpoint = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: receiver.url, events: ['decision.deny'] },
      }),
    );
    const disabled = json(
      await rt.call(rt.testKey, { method: 'POST', url: '/v1/webhooks', payload: { url: receiver.url, events: ['*'] } }),
    );
    expect(
      (
        await rt.call(rt.testKey, {
          method: 'PUT',
          url: `/v1/webhooks/${disabled.id}`,
          payload: { status: 'disabled' },
        })
      ).statusCode,
    ).toBe(200);
    const before = new Set((await decisionRows(rt)).map((r) => r.id));

    // The decision writer's statement: a deny (subscribed) and an allow (not).
    const deny = await decide(rt, { agent_id: 'loud', action: 'orders.delete' });
    const allow = await decide(rt, { agent_id: 'loud', action: 'orders.read', resource: 'order:2' });
    // authz_decide_batch (a known agent's budgeted decision, written with its limits): subscribed once allow is.
    expect(
      (
        await rt.call(rt.testKey, {
          method: 'PUT',
          url: `/v1/webhooks/${endpoint.id}`,
          payload: { events: ['decision.allow'] },
        })
      ).statusCode,
    ).toBe(200);
    const paid = await decide(rt, { agent_id: 'loud', action: 'orders.pay' });
    const deny2 = await decide(rt, { agent_id: 'loud', action: 'orders.delete' });
    expect([deny.effect, allow.effect, paid.effect, deny2.effect]).toEqual(['deny', 'allow', 'allow', 'deny']);

    const rows = (await decisionRows(rt)).filter((r) => !before.has(r.id));
    expect(rows).toEqual(
      [
        { id: derivedEventId(deny.id), type: 'decision.deny', decision_id: deny.id, has_data: false },
        { id: derivedEventId(paid.id), type: 'decision.allow', decision_id: paid.id, has_data: false },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    const deliveries = await rt.store.sql<Array<{ event_id: string; endpoint_id: string }>>`
      select event_id, endpoint_id from webhook_deliveries where account_id = ${rt.accountId} order by event_id`;
    expect(deliveries).toEqual(rows.map((r) => ({ event_id: r.id, endpoint_id: endpoint.id })));

    while ((await rt.services.dispatcher.runOnce()) > 0);
    expect(receiver.bodies.map((b) => b.id).sort()).toEqual(rows.map((r) => r.id));
    for (const body of receiver.bodies) {
      // The body delivered is the event as GET /v1/events/:id shows it, and as the list does (once).
      expect(await rt.getOk(`/v1/events/${body.id}`)).toEqual(body);
      const listed = (await walk(rt, () => 100)).filter((e) => e.id === body.id);
      expect(listed).toEqual([body]);
    }
    // Every decision is listed once, subscribed or not.
    const all = await walk(rt, () => 100);
    for (const d of [deny, allow, paid, deny2])
      expect(all.filter((e) => e.data.decision?.id === d.id).map((e) => e.id)).toEqual([derivedEventId(d.id)]);

    // A replay delivers the same event (its row) again.
    const [delivery] = (await rt.getOk<{ data: JsonObject[] }>(`/v1/webhooks/${endpoint.id}/deliveries`)).data;
    expect(delivery!.event_type).toMatch(/^decision\.(allow|deny)$/);
    const replay = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/webhooks/${endpoint.id}/deliveries/${delivery!.id}/replay`,
    });
    expect(replay.statusCode, replay.body).toBeLessThan(300);
    while ((await rt.services.dispatcher.runOnce()) > 0);
    expect(receiver.bodies).toHaveLength(3);
    expect(receiver.bodies[2]).toEqual(receiver.bodies.find((b) => b.id === delivery!.event_id));
    expect(
      (await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/webhooks/${endpoint.id}` })).statusCode,
    ).toBeLessThan(300);
  });
});

// Its own store: the boundary of migration 025 is moved here, which the other tests would see.
describe.each(STORE_KINDS)('paging over derived decision events (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies(POLICIES);
  });
  afterAll(() => rt.close());

  it('pages over a mixed log exactly: no duplicate, no gap, newest first, for any page sizes and type', async () => {
    // Decisions from before migration 025 keep the by-reference rows they were stored with (migration 017):
    // made here as it made them, then the boundary moved past them.
    const legacy = [];
    for (let i = 0; i < 4; i++)
      legacy.push(await decide(rt, { agent_id: `old-${i % 2}`, action: i % 2 ? 'orders.delete' : 'orders.read' }));
    for (const d of legacy)
      await rt.store.sql`insert into events (id, account_id, environment, type, created_at, data, decision_id)
        values (${newId('evt', Date.parse(d.evaluated_at))}, ${rt.accountId}, 'test', ${`decision.${d.effect}`},
                ${new Date(d.evaluated_at)}, null, ${d.id})`;
    await rt.store.sql`update decision_log_state set derived_events_after = (select max(seq) from decisions)`;

    // Then every kind: new agents (agent.registered), allow, deny, review (a row with its body), decisions
    // whose type an endpoint subscribes to (an anchor row) and after it is disabled (none); time moving on
    // by 0 to 2 ms, so that many share a millisecond.
    const random = seeded(51);
    const endpoint = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: 'http://127.0.0.1:9/closed', events: ['decision.allow', 'decision.review'] },
      }),
    );
    const made = [...legacy];
    for (let i = 0; i < 45; i++) {
      if (i === 30)
        await rt.call(rt.testKey, {
          method: 'PUT',
          url: `/v1/webhooks/${endpoint.id}`,
          payload: { status: 'disabled' },
        });
      const kindOf = Math.floor(random() * 3);
      const body =
        kindOf === 0
          ? { agent_id: `mix-${i % 7}`, action: 'orders.read', resource: `order:${i}` }
          : kindOf === 1
            ? { agent_id: `mix-${i % 5}`, action: 'orders.delete' }
            : { agent_id: `mix-${i % 3}`, action: 'orders.read', resource: `order:vip-${i}` };
      made.push(await decide(rt, body));
      rt.clock.advance(Math.floor(random() * 3) / 1000);
    }

    const full = await walk(rt, () => 100);
    const ids = full.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Newest first; in one millisecond the derived decision events before the events rows (stored first).
    const derived = (e: Listed) => e.id === derivedEventId(String(e.data.decision?.id)) && e.type !== 'decision.review';
    for (let i = 1; i < full.length; i++) {
      const [newer, older] = [full[i - 1]!, full[i]!];
      expect(newer.created_at >= older.created_at, `${newer.id} before ${older.id}`).toBe(true);
      if (newer.created_at === older.created_at && derived(older)) expect(derived(newer)).toBe(true);
    }
    // Every decision of this account once, with the event id it was stored or derived with.
    const legacyIds = new Set(legacy.map((d) => d.id));
    for (const d of made) {
      const events = full.filter((e) => e.type === `decision.${d.effect}` && e.data.decision.id === d.id);
      expect(events, `event of ${d.id}`).toHaveLength(1);
      if (d.effect !== 'review' && !legacyIds.has(d.id)) expect(events[0]!.id).toBe(derivedEventId(d.id));
      if (legacyIds.has(d.id)) expect(events[0]!.id).not.toBe(derivedEventId(d.id));
    }
    // The count: events rows other than anchors, and one per allow or deny decision after the boundary.
    const [{ n }] = await rt.store.sql<Array<{ n: number }>>`
      select (select count(*) from events where account_id = ${rt.accountId} and environment = 'test'
                and (decision_id is null or id <> 'evt_' || substr(decision_id, 5)))
           + (select count(*) from decisions where account_id = ${rt.accountId} and environment = 'test'
                and review_status is null and seq > (select derived_events_after from decision_log_state)) as n`;
    expect(ids.length).toBe(Number(n));
    expect(new Set(full.map((e) => e.type))).toEqual(
      new Set(['decision.allow', 'decision.deny', 'decision.review', 'agent.registered', 'policy.updated']),
    );
    const anchors = await rt.store.sql`select 1 from events where account_id = ${rt.accountId}
      and type = 'decision.allow' and id = 'evt_' || substr(decision_id, 5)`;
    expect(anchors.length).toBeGreaterThan(0);

    // Any page sizes give the same list, filtered or not.
    for (const type of [undefined, 'decision.allow', 'decision.deny', 'decision.review', 'agent.registered']) {
      const expected = full.filter((e) => type === undefined || e.type === type);
      for (let run = 0; run < 3; run++) {
        const paged = await walk(rt, () => 1 + Math.floor(random() * 9), type);
        expect(paged.map((e) => e.id)).toEqual(expected.map((e) => e.id));
      }
    }
    // A cursor of another type bounds a filtered list too; a cursor that names nothing is refused.
    const middle = full[Math.floor(full.length / 2)]!;
    const after = await rt.getOk<{ data: Listed[] }>(
      `/v1/events?type=decision.deny&limit=100&starting_after=${middle.id}`,
    );
    expect(after.data.map((e) => e.id)).toEqual(
      full.filter((e) => e.type === 'decision.deny' && e.id < middle.id).map((e) => e.id),
    );
    for (const unknown of [derivedEventId(newId('dec', rt.clock.now())), 'evt_nothing'])
      expect(
        (await rt.call(rt.testKey, { method: 'GET', url: `/v1/events?starting_after=${unknown}` })).statusCode,
      ).toBe(400);
  });
});
