/**
 * Session and user budgets across server processes (docs/budgets-and-limits.md#spend-controls-for-agent-runs;
 * docs/budgets-and-limits.md#how-the-counters-stay-exact: "held + consumed never exceeds the limit, even under
 * concurrent requests on several server processes").
 *
 * Two real `authz serve` child processes on one PostgreSQL database, on the real
 * clock, driven over real HTTP (as test/runtime/limits-processes.test.ts does
 * for agent budgets): concurrent decisions racing one session budget and one
 * user budget (several agents) never overspend and stop at exactly the limit;
 * decisions of other sessions and users racing beside them are untouched; an
 * exhausted session or user is denied on both processes (NOTIFY: the periodic
 * reload is an hour away), and other sessions and users are not. No timing is
 * asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, serverCalls, split, startServer, stopAll, uniqueId, type Server } from '../helpers/db-servers.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { ensureBuilt, request } from '../helpers/server-process.js';
import type { JsonObject } from '../helpers/json.js';

const TEST_TIMEOUT = 60_000;

const fresh = uniqueId;

describe('session and user budgets across two `authz serve` processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let a: Server;
  let b: Server;
  let key = '';

  const { api, decide, decideOk, install: installOn } = serverCalls(() => key);
  const remaining = async (server: Server, params: Record<string, string>) => {
    const r = await api(server, 'GET', `/v1/budgets/remaining?${new URLSearchParams(params)}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.data as Array<JsonObject>;
  };

  /** Creates the policy through A and waits until both processes decide with it. */
  function install(policy: Record<string, unknown>, probe: Record<string, unknown>) {
    return installOn([a, b], policy, (server) => ({
      ...probe,
      agent_id: fresh(`probe-${server.name}`),
      session_id: fresh('probe'),
      on_behalf_of: fresh('probe'),
    }));
  }

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDatabase();
    a = await startServer('A', db.url);
    b = await startServer('B', db.url);
    const account = await request(a.base, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'spend-controls-processes' });
    expect(account.status, JSON.stringify(account.body)).toBe(201);
    const created = await request(a.base, ADMIN_TOKEN, 'POST', `/admin/accounts/${account.body.id}/api-keys`, {
      environment: 'test',
      scopes: ['*'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    key = created.body.key as string;
    for (const server of [a, b]) expect((await api(server, 'GET', '/v1/policies')).status).toBe(200);
  }, 90_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  }, 60_000);

  it(
    'a session budget: 200 decisions of one run over both processes (20, then 180 concurrent) hold exactly floor(5/0.07) = 71 x 0.07; another run racing beside it is untouched; the run is then denied on both',
    async () => {
      await install(
        {
          id: 'pol_run_usd',
          name: 'run-usd',
          effect: 'allow',
          actions: ['llm.call', 'docs.read'],
          budget: { unit: 'USD', limit: 5, period: 'daily', scope: 'session' },
        },
        { action: 'llm.call', amount: 0 },
      );
      const agentId = fresh('agent');
      const [run, other] = [fresh('run'), fresh('run')];
      const body = { agent_id: agentId, session_id: run, action: 'llm.call', amount: 0.07 };
      const beside = { ...body, session_id: other, amount: 0.01 };
      // First 20 (10 through each process, 1.4 of 5): both processes hold part of the run's budget. Then the other
      // 180 at once race for what is left (3.6 / 0.07 = 51 more). Sent as one wave, whichever process's batch
      // reached the store first could take all 71 (seen in CI): the total would still be exact, but one process
      // would have held nothing.
      const first = await Promise.all(split(20, a, b).map((server) => decide(server, body)));
      expect(first.map((r) => r.body.effect)).toEqual(Array(20).fill('allow'));
      const replies = [...first, ...(await Promise.all(split(180, a, b).map((server) => decide(server, body))))];
      const besides = await Promise.all(split(20, b, a).map((server) => decide(server, beside)));
      for (const r of [...replies, ...besides]) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const allowed = replies.filter((r) => r.body.effect === 'allow');
      expect(allowed.length).toBe(71);
      for (const r of replies.filter((x) => x.body.effect !== 'allow'))
        expect(r.body).toMatchObject({ effect: 'deny', reason: 'budget.exceeded', policy_id: 'pol_run_usd' });
      expect(besides.every((r) => r.body.effect === 'allow')).toBe(true);
      for (const server of [a, b]) {
        expect(await remaining(server, { agent_id: agentId, session_id: run })).toEqual([
          expect.objectContaining({
            policy_id: 'pol_run_usd',
            scope: 'session',
            consumed: 0,
            held: 4.97,
            remaining: 0.03,
          }),
        ]);
        expect(await remaining(server, { agent_id: agentId, session_id: other })).toEqual([
          expect.objectContaining({ held: 0.2, remaining: 4.8 }),
        ]);
      }
      // Confirm every hold (half through each process): consumption reaches 4.97 of 5, nothing more fits.
      const confirmed = await Promise.all(
        allowed.map((r, i) => api(i % 2 === 0 ? a : b, 'POST', `/v1/decisions/${r.body.id}/confirm`)),
      );
      expect(confirmed.every((r) => r.status === 200)).toBe(true);
      const rows = await api(b, 'GET', `/v1/budgets?${new URLSearchParams({ agent_id: agentId, session_id: run })}`);
      expect(rows.body.data).toEqual([
        expect.objectContaining({
          scope: 'session',
          session_id: run,
          agent_id: agentId,
          consumed: 4.97,
          held: 0,
          status: 'ok',
        }),
      ]);
      // A confirm for the last 0.03 exhausts the run: both processes then deny that run, not the other one.
      const last = await decideOk(a, { ...body, amount: 0.03 });
      expect(last.effect).toBe('allow');
      expect((await api(b, 'POST', `/v1/decisions/${last.id}/confirm`)).status).toBe(200);
      for (const server of [a, b]) {
        await expect
          .poll(async () => (await decideOk(server, { ...body, action: 'docs.read', amount: 0 })).reason, {
            timeout: 15_000,
            interval: 50,
          })
          .toBe('budget.exceeded');
        expect(await decideOk(server, beside)).toMatchObject({ effect: 'allow' });
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'a user budget: 200 concurrent calls by four agents for one user over both processes consume exactly the limit (40); the user is then denied for every agent on both, other users are not',
    async () => {
      await install(
        {
          id: 'pol_user_calls',
          name: 'user-calls',
          effect: 'allow',
          actions: ['tickets.create', 'tickets.read'],
          budget: { unit: 'calls', limit: 40, period: 'monthly', scope: 'user' },
        },
        { action: 'tickets.create' },
      );
      const agents = [fresh('agent'), fresh('agent'), fresh('agent'), fresh('agent')];
      const [user, other] = [fresh('user'), fresh('user')];
      const bodies = Array.from({ length: 200 }, (_, i) => ({
        agent_id: agents[i % 4]!,
        on_behalf_of: user,
        action: 'tickets.create',
      }));
      const replies = await Promise.all(bodies.map((body, i) => decide(i % 2 === 0 ? a : b, body)));
      const others = await Promise.all(
        split(10, b, a).map((server, i) =>
          decide(server, { agent_id: agents[i % 4]!, on_behalf_of: other, action: 'tickets.create' }),
        ),
      );
      for (const r of [...replies, ...others]) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const allowed = replies.filter((r) => r.body.effect === 'allow');
      expect(allowed.length).toBe(40);
      for (const r of replies.filter((x) => x.body.effect !== 'allow'))
        expect(r.body).toMatchObject({ effect: 'deny', reason: 'budget.exceeded', policy_id: 'pol_user_calls' });
      expect(others.every((r) => r.body.effect === 'allow')).toBe(true);
      for (const server of [a, b]) {
        const rows = await api(server, 'GET', `/v1/budgets?on_behalf_of=${encodeURIComponent(user)}`);
        expect(rows.body.data).toEqual([
          expect.objectContaining({
            policy_id: 'pol_user_calls',
            scope: 'user',
            agent_id: null,
            on_behalf_of: user,
            consumed: 40,
            held: 0,
            status: 'exceeded',
          }),
        ]);
        // A fifth agent acting for that user is denied on both processes; for the other user it is not.
        const newcomer = fresh('agent');
        await expect
          .poll(
            async () =>
              (await decideOk(server, { agent_id: newcomer, on_behalf_of: user, action: 'tickets.read' })).reason,
            { timeout: 15_000, interval: 50 },
          )
          .toBe('budget.exceeded');
        expect(
          await decideOk(server, { agent_id: newcomer, on_behalf_of: other, action: 'tickets.read' }),
        ).toMatchObject({ effect: 'allow' });
      }
      // Exactly one budget.exceeded event for the user, naming the agent whose decision crossed the line.
      const events = await api(a, 'GET', '/v1/events?type=budget.exceeded&limit=100');
      const mine = (events.body.data as Array<JsonObject>).filter((e) => e.data.on_behalf_of === user);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.data).toMatchObject({
        scope: 'user',
        on_behalf_of: user,
        policy_id: 'pol_user_calls',
        budget_consumed: 40,
      });
      expect(agents).toContain(mine[0]!.data.agent_id);
    },
    TEST_TIMEOUT,
  );
});
