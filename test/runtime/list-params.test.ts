/**
 * List parameters are checked like every other input, on both stores, on every
 * list the app registers (enumerated: the GET routes whose query takes
 * `starting_after`): a `starting_after` that is not an item of the list in this
 * account and environment (made up, or another tenant's) is 400
 * validation.invalid_field naming the parameter, never an empty page; the
 * cursor of a real item pages on (the last item: an empty page). GET
 * /v1/events?type= takes the event types only.
 */
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../runtime/events/build.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { expectContractAnswer } from '../fuzz/helpers/contract.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

/** The cursor an item of each list gives (`starting_after` = that of the last item of the previous page). */
const CURSOR: Record<string, (item: JsonObject) => string> = {
  '/v1/decisions': (x) => x.id,
  '/v1/policies': (x) => x.id,
  '/v1/agents': (x) => x.agent_id,
  '/v1/budgets': (x) =>
    x.scope === 'user'
      ? `${x.policy_id}::${x.on_behalf_of}`
      : x.scope === 'session'
        ? `${x.policy_id}:${x.agent_id}:${x.session_id}`
        : `${x.policy_id}:${x.agent_id}`,
  '/v1/events': (x) => x.id,
  '/v1/webhooks': (x) => x.id,
  '/v1/webhooks/:id/deliveries': (x) => x.id,
  '/v1/reviews': (x) => x.id,
};

describe.each(STORE_KINDS)('list parameters (%s store)', (kind) => {
  let rt: TestRuntime;
  const lists: string[] = [];
  /** Per tenant (main, other): the URL of each list with its path filled in. */
  const urls: Array<Record<string, string>> = [];

  beforeAll(async () => {
    rt = await startRuntime(kind, {
      app: {
        onRoute: (route: RouteOptions) => {
          const query = (route.schema as { querystring?: { properties?: Record<string, unknown> } } | undefined)
            ?.querystring;
          if (route.method === 'GET' && query?.properties?.starting_after) lists.push(route.url);
        },
      },
    });
    for (const [tenant, key] of [
      ['main', rt.testKey],
      ['other', rt.otherKey],
    ] as const) {
      const post = async (url: string, payload: object) => {
        const r = await rt.call(key, { method: 'POST', url, payload });
        expect(r.statusCode, `${url}: ${r.body}`).toBeLessThan(300);
        return json(r);
      };
      await post('/v1/webhooks', { url: 'http://127.0.0.1:9/lists-quiet', events: ['agent.revoked'] });
      const hook = await post('/v1/webhooks', { url: 'http://127.0.0.1:9/lists', events: ['*'] });
      for (const name of ['a', 'b'])
        await post('/v1/policies', {
          name: `lists-${name}`,
          effect: 'allow',
          actions: [`lists.${name}`],
          budget: { unit: 'USD', limit: 100, period: 'daily' },
        });
      for (const [agent, action] of [
        ['1', 'lists.a'],
        ['2', 'lists.b'],
        ['1', 'lists.b'],
      ]) {
        expect((await post('/v1/decisions', { agent_id: `lists-${tenant}-${agent}`, action, amount: 1 })).effect).toBe(
          'allow',
        );
      }
      // Two open reviews.
      await post('/v1/policies', { name: 'lists-r', effect: 'review', actions: ['lists.r'] });
      for (const agent of ['1', '2'])
        expect((await post('/v1/decisions', { agent_id: `lists-${tenant}-${agent}`, action: 'lists.r' })).effect).toBe(
          'review',
        );
      urls.push(Object.fromEntries(lists.map((url) => [url, url.replace(':id', hook.id)])));
    }
  });
  afterAll(() => rt?.close());

  const get = (url: string, key = rt.testKey) => rt.call(key, { method: 'GET', url });

  it('finds every list, and each is mapped to its cursor', () => {
    expect(lists).toEqual(expect.arrayContaining(Object.keys(CURSOR)));
    expect(lists.filter((url) => !CURSOR[url])).toEqual([]);
  });

  it('a made-up starting_after is 400 validation.invalid_field naming the parameter, on every list', async () => {
    for (const list of lists) {
      for (const made of ['zz_made_up', 'dec_0000000000000000000000', 'pol_nope:agent', '.']) {
        const url = `${urls[0]![list]}?starting_after=${encodeURIComponent(made)}`;
        const r = await get(url);
        expect(expectContractAnswer(r, url), `${url}: ${r.body}`).toBe('validation.invalid_field');
        const error = json(r).error;
        expect(error.message, url).toContain('starting_after');
        expect(error.details, url).toEqual([
          { path: '/starting_after', message: expect.stringContaining('starting_after') },
        ]);
      }
    }
  });

  it("another tenant's item as starting_after is the same 400 (it is not an item of this list)", async () => {
    for (const list of lists) {
      const theirs = json(await get(`${urls[1]![list]}?limit=1`, rt.otherKey)).data[0];
      expect(theirs, `${list}: the other tenant has an item`).toBeDefined();
      const url = `${urls[0]![list]}?starting_after=${encodeURIComponent(CURSOR[list]!(theirs))}`;
      const r = await get(url);
      expect(expectContractAnswer(r, url), `${url}: ${r.body}`).toBe('validation.invalid_field');
    }
  });

  it("the cursor of a real item pages on; the last item's gives an empty page", async () => {
    for (const list of lists) {
      const all = json(await get(`${urls[0]![list]}?limit=100`)).data as Array<JsonObject>;
      expect(all.length, list).toBeGreaterThanOrEqual(2);
      const cursors = all.map(CURSOR[list]!);
      const second = await get(`${urls[0]![list]}?limit=1&starting_after=${encodeURIComponent(cursors[0]!)}`);
      expect(second.statusCode, second.body).toBe(200);
      expect(json(second).data.map(CURSOR[list]!), list).toEqual([cursors[1]]);
      const last = await get(`${urls[0]![list]}?starting_after=${encodeURIComponent(cursors.at(-1)!)}`);
      expect(last.statusCode, last.body).toBe(200);
      expect(json(last), list).toMatchObject({ data: [], has_more: false });
    }
  });

  it('GET /v1/events?type= takes each event type, and nothing else (400 validation.invalid_field naming the parameter)', async () => {
    for (const type of EVENT_TYPES) {
      const r = await get(`/v1/events?type=${type}&limit=100`);
      expect(r.statusCode, `${type}: ${r.body}`).toBe(200);
      expect(
        (json(r).data as Array<{ type: string }>).every((e) => e.type === type),
        type,
      ).toBe(true);
    }
    expect(json(await get('/v1/events?type=decision.allow')).data.length).toBeGreaterThan(0);
    for (const type of ['no.such_type', 'decision', 'decision.*', '*', 'Decision.Allow', 'decision.allow ']) {
      const url = `/v1/events?type=${encodeURIComponent(type)}`;
      const r = await get(url);
      expect(expectContractAnswer(r, url), `${url}: ${r.body}`).toBe('validation.invalid_field');
      expect(json(r).error.details, url).toEqual([
        expect.objectContaining({ path: '/type', message: expect.stringContaining('decision.allow') }),
      ]);
    }
  });
});
