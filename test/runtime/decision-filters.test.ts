/**
 * GET /v1/decisions filters, on both stores: `effect` (allow | deny | review)
 * and `reason`, alone, together and with `agent_id`, newest first, with
 * `limit` / `starting_after` pagination over a filtered list; a bad effect is
 * 400 validation.invalid_field naming the allowed values; unknown query
 * parameters are still refused. Every test works on an account of its own
 * (created through the admin API), so a list shows exactly that test's rows.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { decide as kitDecide } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

type Effect = 'allow' | 'deny' | 'review';

/** A decision as made, with what the test expects of it. */
interface Made {
  id: string;
  agent_id: string;
  effect: Effect;
  reason: string;
}

const EFFECTS: Effect[] = ['allow', 'deny', 'review'];
const REASONS = ['policy.matched', 'policy.not_found', 'policy.disabled', 'budget.exceeded', 'agent.revoked'];

/** The policies of a seeded account (sent through the API, as JSON). */
const POLICIES = [
  { id: 'pol_orders_read', name: 'orders-read', effect: 'allow', actions: ['orders.read'] },
  { id: 'pol_refund_review', name: 'refund-review', effect: 'review', actions: ['payments.refund'] },
  { id: 'pol_orders_delete', name: 'orders-delete', effect: 'deny', actions: ['orders.delete'] },
  { id: 'pol_reports_off', name: 'reports-off', state: 'disabled', effect: 'allow', actions: ['reports.export'] },
  {
    id: 'pol_search_budget',
    name: 'search-budget',
    effect: 'allow',
    actions: ['search.run'],
    budget: { unit: 'calls', limit: 1, period: 'monthly' },
  },
];

let seq = 0;
const uniqueAgent = (tag: string) => `${tag}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

describe.each(STORE_KINDS)('decision list filters (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt?.close());

  /** A new account with a test and a live key of every scope. */
  async function newAccount(name = 'filters'): Promise<{ id: string; key: string; liveKey: string }> {
    const acc = await rt.call(ADMIN_TOKEN, { method: 'POST', url: '/admin/accounts', payload: { name } });
    expect(acc.statusCode, acc.body).toBe(201);
    const id = json(acc).id as string;
    const keyFor = async (environment: 'test' | 'live') => {
      const r = await rt.call(ADMIN_TOKEN, {
        method: 'POST',
        url: `/admin/accounts/${id}/api-keys`,
        payload: { environment, scopes: ['*'] },
      });
      expect(r.statusCode, r.body).toBe(201);
      return json(r).key as string;
    };
    return { id, key: await keyFor('test'), liveKey: await keyFor('live') };
  }

  const decide = (key: string, agent_id: string, action: string) => kitDecide(rt, { agent_id, action }, key);

  const listRaw = (key: string, query: string) =>
    rt.call(key, { method: 'GET', url: `/v1/decisions${query ? `?${query}` : ''}` });
  const list = async (key: string, query: string) => {
    const r = await listRaw(key, query);
    expect(r.statusCode, `${query}: ${r.body}`).toBe(200);
    const body = json(r);
    expect(body.object).toBe('list');
    expect(body.url).toBe('/v1/decisions');
    return body as { data: Array<JsonObject>; has_more: boolean };
  };

  /**
   * An account with two agents' decisions of every effect and of five reasons
   * (plus decisions of the same agent ids in its live environment and in another
   * account, which no test-key list may show). Returned oldest first.
   */
  async function seed(): Promise<{ key: string; a: string; b: string; made: Made[] }> {
    const account = await newAccount();
    for (const policy of POLICIES) {
      const r = await rt.call(account.key, { method: 'POST', url: '/v1/policies', payload: policy });
      expect(r.statusCode, r.body).toBe(201);
    }
    const a = uniqueAgent('agent-a');
    const b = uniqueAgent('agent-b');
    const made: Made[] = [];
    const step = async (agent: string, action: string, effect: Effect, reason: string) => {
      const d = await decide(account.key, agent, action);
      expect({ action, effect: d.effect, reason: d.reason }).toEqual({ action, effect, reason });
      made.push({ id: d.id, agent_id: agent, effect, reason });
      rt.clock.advance(1);
    };
    await step(a, 'orders.read', 'allow', 'policy.matched');
    await step(b, 'orders.read', 'allow', 'policy.matched');
    await step(a, 'payments.refund', 'review', 'policy.matched');
    await step(b, 'orders.delete', 'deny', 'policy.matched');
    await step(a, 'unknown.thing', 'deny', 'policy.not_found');
    await step(b, 'reports.export', 'deny', 'policy.disabled');
    await step(b, 'payments.refund', 'review', 'policy.matched');
    await step(b, 'nothing.here', 'deny', 'policy.not_found');
    const revoke = await rt.call(account.key, { method: 'POST', url: `/v1/agents/${b}/revoke` });
    expect(revoke.statusCode, revoke.body).toBe(200);
    await step(b, 'orders.read', 'deny', 'agent.revoked');
    await step(a, 'orders.delete', 'deny', 'policy.matched');
    await step(b, 'payments.refund', 'deny', 'agent.revoked');
    await step(a, 'reports.export', 'deny', 'policy.disabled');
    await step(a, 'orders.read', 'allow', 'policy.matched');
    // Last: an exhausted budget blocks the agent entirely from then on.
    await step(a, 'search.run', 'allow', 'policy.matched'); // uses the budget of 1 call
    await step(a, 'search.run', 'deny', 'budget.exceeded');
    // Same agents elsewhere: the live environment (no policies there) and another account.
    const other = await newAccount('filters-other');
    for (const key of [account.liveKey, other.key]) {
      await decide(key, a, 'orders.read');
      await decide(key, b, 'orders.delete');
    }
    return { key: account.key, a, b, made };
  }

  /** The made decisions matching the filters, newest first. */
  const expected = (made: Made[], f: { agent?: string; effect?: string; reason?: string }) =>
    made
      .filter(
        (d) =>
          (f.agent === undefined || d.agent_id === f.agent) &&
          (f.effect === undefined || d.effect === f.effect) &&
          (f.reason === undefined || d.reason === f.reason),
      )
      .map((d) => d.id)
      .reverse();

  const query = (f: { agent?: string; effect?: string; reason?: string }, extra = 'limit=100') =>
    [
      extra,
      f.agent !== undefined ? `agent_id=${encodeURIComponent(f.agent)}` : '',
      f.effect !== undefined ? `effect=${f.effect}` : '',
      f.reason !== undefined ? `reason=${f.reason}` : '',
    ]
      .filter(Boolean)
      .join('&');

  it('the seeded account lists all of its decisions, and only them, newest first', async () => {
    const { key, made } = await seed();
    const all = await list(key, 'limit=100');
    expect(all.data.map((d) => d.id)).toEqual(made.map((d) => d.id).reverse());
    expect(all.has_more).toBe(false);
  });

  it('effect alone returns exactly the decisions of that effect, newest first', async () => {
    const { key, made } = await seed();
    for (const effect of EFFECTS) {
      const page = await list(key, query({ effect }));
      const ids = expected(made, { effect });
      expect(ids.length, effect).toBeGreaterThan(0);
      expect(
        page.data.map((d) => d.id),
        effect,
      ).toEqual(ids);
      expect(page.has_more).toBe(false);
      for (const d of page.data) {
        expect(d.object).toBe('decision');
        expect(d.effect).toBe(effect);
      }
    }
    // The three effects partition the list.
    const sizes = EFFECTS.map((effect) => expected(made, { effect }).length);
    expect(sizes.reduce((x, y) => x + y, 0)).toBe(made.length);
  });

  it('reason alone returns exactly the decisions of that reason, newest first', async () => {
    const { key, made } = await seed();
    for (const reason of REASONS) {
      const ids = expected(made, { reason });
      expect(ids.length, reason).toBeGreaterThan(0);
      const page = await list(key, query({ reason }));
      expect(
        page.data.map((d) => d.id),
        reason,
      ).toEqual(ids);
      for (const d of page.data) expect(d.reason).toBe(reason);
    }
    // A reason no decision has (valid, just unused here), and one that does not exist: empty lists, not errors.
    for (const reason of ['resource.not_allowed', 'no.such_reason']) {
      expect(await list(key, query({ reason }))).toMatchObject({ data: [], has_more: false });
    }
  });

  it('every combination of agent_id, effect and reason returns exactly the matching decisions', async () => {
    const { key, a, b, made } = await seed();
    const agents = [undefined, a, b, uniqueAgent('nobody')];
    const effects = [undefined, ...EFFECTS];
    const reasons = [undefined, ...REASONS, 'resource.not_allowed'];
    let nonEmpty = 0;
    for (const agent of agents) {
      for (const effect of effects) {
        for (const reason of reasons) {
          const f = { agent, effect, reason };
          const want = expected(made, f);
          if (want.length > 0) nonEmpty++;
          const page = await list(key, query(f));
          expect(
            page.data.map((d) => d.id),
            JSON.stringify(f),
          ).toEqual(want);
        }
      }
    }
    // The grid is not trivially empty: many combinations select something.
    expect(nonEmpty).toBeGreaterThan(20);
    // A few by hand, so that the expectation helper is checked too.
    const ids = (q: string) => list(key, q).then((p) => p.data.map((d) => d.id));
    const byIndex = (...i: number[]) => i.map((n) => made[n]!.id);
    expect(await ids(`agent_id=${a}&effect=deny`)).toEqual(byIndex(14, 11, 9, 4));
    expect(await ids(`agent_id=${b}&reason=agent.revoked`)).toEqual(byIndex(10, 8));
    expect(await ids('effect=deny&reason=policy.disabled')).toEqual(byIndex(11, 5));
    expect(await ids(`agent_id=${b}&effect=review&reason=policy.matched`)).toEqual(byIndex(6));
    expect(await ids('effect=allow&reason=policy.not_found')).toEqual([]);
    expect(await ids(`agent_id=${a}&effect=review&reason=agent.revoked`)).toEqual([]);
  });

  it('paginates a filtered list with limit and starting_after', async () => {
    const { key, a, made } = await seed();
    for (const f of [
      { effect: 'deny' },
      { reason: 'policy.matched' },
      { agent: a, effect: 'deny' },
      { effect: 'deny', reason: 'policy.not_found' },
    ]) {
      const want = expected(made, f);
      expect(want.length, JSON.stringify(f)).toBeGreaterThanOrEqual(2);
      for (const limit of [1, 2, 3]) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; ; pages++) {
          expect(pages, 'pagination does not end').toBeLessThan(want.length + 1);
          const page = await list(key, query(f, `limit=${limit}${cursor ? `&starting_after=${cursor}` : ''}`));
          const ids = page.data.map((d) => d.id as string);
          // Each page is the next slice of the filtered list.
          expect(ids, `${JSON.stringify(f)} limit ${limit}`).toEqual(want.slice(seen.length, seen.length + limit));
          seen.push(...ids);
          expect(page.has_more).toBe(seen.length < want.length);
          if (!page.has_more) break;
          cursor = ids.at(-1);
        }
        expect(seen).toEqual(want);
      }
    }
    // A page of exactly the remaining items says has_more false.
    const denies = expected(made, { effect: 'deny' });
    const tail = await list(key, `effect=deny&limit=${denies.length - 1}&starting_after=${denies[0]}`);
    expect(tail.data.map((d) => d.id)).toEqual(denies.slice(1));
    expect(tail.has_more).toBe(false);
  });

  it('a decision made after a page was read does not shift the next page', async () => {
    const { key, a, made } = await seed();
    const want = expected(made, { agent: a, effect: 'deny' });
    const first = await list(key, `agent_id=${a}&effect=deny&limit=2`);
    expect(first.data.map((d) => d.id)).toEqual(want.slice(0, 2));
    const newer = await decide(key, a, 'orders.delete');
    expect(newer.effect).toBe('deny');
    const second = await list(key, `agent_id=${a}&effect=deny&limit=2&starting_after=${first.data[1]!.id}`);
    expect(second.data.map((d) => d.id)).toEqual(want.slice(2, 4));
    expect((await list(key, `agent_id=${a}&effect=deny&limit=1`)).data.map((d) => d.id)).toEqual([newer.id]);
  });

  describe('validation', () => {
    const expectInvalidField = (r: LightMyRequestResponse) => {
      expect(r.statusCode, r.body).toBe(400);
      const body = json(r);
      expect(Object.keys(body)).toEqual(['error']);
      expect(body.error.code).toBe('validation.invalid_field');
      expect(body.error.request_id).toBe(r.headers['request-id']);
      return body.error as { code: string; message: string; details: Array<{ path: string; message: string }> };
    };

    it('a bad effect is 400 validation.invalid_field naming the allowed values', async () => {
      const { key } = await newAccount();
      // Something to (not) list: the answer must be the error, not a filtered list.
      await decide(key, uniqueAgent('val'), 'orders.read');
      for (const effect of ['maybe', 'ALLOW', 'Allow', 'denied', '', 'allow,deny', 'allow%20']) {
        const error = expectInvalidField(await listRaw(key, `effect=${effect}`));
        expect(error.message, effect).toMatch(/effect/);
        expect(error.message, effect).toMatch(/allow, deny, review/);
        expect(error.details).toEqual([{ path: '/effect', message: error.message }]);
      }
      // Given twice (an array): refused too, never a 500.
      const twice = expectInvalidField(await listRaw(key, 'effect=allow&effect=deny'));
      expect(twice.details.map((d) => d.path)).toEqual(['/effect']);
      // With other parameters, valid or not: still the effect's problem.
      const mixed = expectInvalidField(await listRaw(key, 'limit=5&agent_id=x&effect=nope'));
      expect(mixed.details.map((d) => d.path)).toEqual(['/effect']);
      const both = expectInvalidField(await listRaw(key, 'limit=0&effect=nope'));
      expect(both.details.map((d) => d.path).sort()).toEqual(['/effect', '/limit']);
    });

    it('an empty, repeated or over-long reason is 400 validation.invalid_field', async () => {
      const { key } = await newAccount();
      for (const [q, path] of [
        ['reason=', '/reason'],
        ['reason=a.b&reason=c.d', '/reason'],
        [`reason=${'r'.repeat(101)}`, '/reason'],
      ] as const) {
        const error = expectInvalidField(await listRaw(key, q));
        expect(
          error.details.map((d) => d.path),
          q,
        ).toEqual([path]);
      }
      expect((await list(key, `reason=${'r'.repeat(100)}`)).data).toEqual([]);
    });

    it('unknown query parameters are still refused, alone or beside the filters', async () => {
      const { key } = await newAccount();
      for (const q of ['foo=bar', 'effect=allow&foo=bar', 'reason=policy.matched&status=pending', 'effects=allow']) {
        const error = expectInvalidField(await listRaw(key, q));
        expect(error.message, q).toMatch(/unknown field/);
      }
      // The valid filters still answer.
      for (const q of [
        'effect=allow',
        'effect=deny',
        'effect=review',
        'reason=policy.matched',
        'effect=allow&reason=policy.matched&agent_id=x&limit=1',
      ]) {
        expect((await list(key, q)).data).toEqual([]);
      }
    });

    it('a refused list query reads nothing and changes nothing', async () => {
      const { key } = await newAccount();
      const d = await decide(key, uniqueAgent('unchanged'), 'unknown.thing');
      expectInvalidField(await listRaw(key, 'effect=maybe'));
      expect((await list(key, 'limit=100')).data.map((x) => x.id)).toEqual([d.id]);
      expect((await list(key, 'effect=deny&reason=policy.not_found')).data.map((x) => x.id)).toEqual([d.id]);
    });
  });
});
