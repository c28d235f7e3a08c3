/**
 * Spend controls for agent runs over HTTP on both stores (docs/budgets-and-limits.md#spend-controls-for-agent-runs): budgets per session and per user, the period
 * resetting them, an exhausted session denying only that session, an exhausted
 * user budget denying every agent acting for that user, tokens and USD held
 * together through `amounts`, the 400s, budget events and GET /v1/budgets rows
 * carrying the scope and its key, and GET /v1/budgets/remaining.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../../compiler/policy/types.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { postDecision } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

let seq = 0;
/** A fresh id per call, so tests never share rows. */
const fresh = (tag: string) => `${tag}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

type PolicyInput = Partial<Policy> & Pick<Policy, 'effect' | 'actions'>;

describe.each(STORE_KINDS)('spend controls (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt.close());

  const decideOk = async (body: Record<string, unknown>) => {
    const r = await postDecision(rt, body);
    expect(r.statusCode, r.body).toBe(200);
    return json(r);
  };
  const resolve = (id: string, verb: 'confirm' | 'reject', body?: object) =>
    rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${id}/${verb}`, ...(body ? { payload: body } : {}) });
  const eventsOf = async (policyId: string) =>
    (
      [
        ...(await rt.getOk('/v1/events?type=budget.threshold&limit=100')).data,
        ...(await rt.getOk('/v1/events?type=budget.exceeded&limit=100')).data,
      ] as Array<JsonObject>
    )
      .filter((e) => e.data.policy_id === policyId)
      .sort((a, b) =>
        a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.type === 'budget.threshold' ? -1 : 1,
      );
  const install = (policies: PolicyInput[]) => rt.setPolicies(policies);
  const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

  it("a session budget counts per session: an exhausted session is denied, the agent's other sessions are not; the period resets it", async () => {
    await install([
      {
        id: 'pol_run',
        effect: 'allow',
        actions: ['llm.call'],
        budget: { unit: 'calls', limit: 2, period: 'daily', scope: 'session', threshold_alert: 0.5 },
      },
      { id: 'pol_read', effect: 'allow', actions: ['docs.read'] },
    ]);
    const a = fresh('agent');
    const [s1, s2] = [fresh('run'), fresh('run')];
    for (let i = 0; i < 2; i++)
      expect(await decideOk({ agent_id: a, session_id: s1, action: 'llm.call' })).toMatchObject({
        effect: 'allow',
        session_id: s1,
      });
    expect(await decideOk({ agent_id: a, session_id: s1, action: 'llm.call' })).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
      policy_id: 'pol_run',
    });
    // That session's later decisions are denied, under another policy too; not the agent's other session, nor the agent without one.
    expect(await decideOk({ agent_id: a, session_id: s1, action: 'docs.read' })).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
      policy_id: 'pol_run',
    });
    expect(await decideOk({ agent_id: a, session_id: s2, action: 'llm.call' })).toMatchObject({ effect: 'allow' });
    expect(await decideOk({ agent_id: a, action: 'docs.read' })).toMatchObject({ effect: 'allow' });
    // Another agent using the same session id has its own row.
    expect(await decideOk({ agent_id: fresh('agent'), session_id: s1, action: 'llm.call' })).toMatchObject({
      effect: 'allow',
    });

    const events = await eventsOf('pol_run');
    const mine = events.filter((e) => e.data.session_id === s1 && e.data.agent_id === a);
    expect(mine.map((e) => e.type)).toEqual(['budget.threshold', 'budget.exceeded']);
    expect(mine[1]!.data).toMatchObject({
      scope: 'session',
      session_id: s1,
      agent_id: a,
      budget_unit: 'calls',
      budget_consumed: 2,
      budget_limit: 2,
    });
    expect(mine[1]!.data.on_behalf_of).toBeUndefined();

    const rows = (await rt.getOk(`/v1/budgets?${query({ agent_id: a, session_id: s1 })}`)).data as Array<JsonObject>;
    expect(rows).toEqual([
      expect.objectContaining({
        policy_id: 'pol_run',
        scope: 'session',
        agent_id: a,
        session_id: s1,
        on_behalf_of: null,
        consumed: 2,
        status: 'exceeded',
      }),
    ]);
    const all = (await rt.getOk(`/v1/budgets?${query({ agent_id: a })}`)).data as Array<JsonObject>;
    expect(all.map((r) => [r.session_id, r.consumed]).sort()).toEqual(
      [
        [s1, 2],
        [s2, 1],
      ].sort(),
    );
    // Pagination by the row's cursor `<policy_id>:<agent_id>:<session_id>`.
    const first = (await rt.getOk(`/v1/budgets?${query({ agent_id: a, limit: '1' })}`)) as {
      data: Array<JsonObject>;
      has_more: boolean;
    };
    expect(first.has_more).toBe(true);
    const cursor = `pol_run:${a}:${first.data[0]!.session_id}`;
    const second = await rt.getOk(`/v1/budgets?${query({ agent_id: a, limit: '1', starting_after: cursor })}`);
    expect(second.data.map((r: JsonObject) => r.session_id)).toEqual(
      [first.data[0]!.session_id === s1 ? s2 : s1].filter((s) => s > first.data[0]!.session_id),
    );

    // The next day: the session starts afresh.
    rt.clock.set(Date.parse(rows[0]!.period_resets_at));
    expect(await decideOk({ agent_id: a, session_id: s1, action: 'llm.call' })).toMatchObject({ effect: 'allow' });
    expect((await rt.getOk(`/v1/budgets?${query({ agent_id: a, session_id: s1 })}`)).data).toEqual([
      expect.objectContaining({ consumed: 1, status: 'threshold' }),
    ]);
  });

  it('concurrent decisions on one session budget and one user budget (this process, one batch after another) stop at exactly the limit', async () => {
    await install([
      {
        id: 'pol_race_run',
        effect: 'allow',
        actions: ['race.run'],
        budget: { unit: 'USD', limit: 1, period: 'daily', scope: 'session' },
      },
      {
        id: 'pol_race_user',
        effect: 'allow',
        actions: ['race.user'],
        budget: { unit: 'calls', limit: 25, period: 'daily', scope: 'user' },
      },
    ]);
    const a = fresh('agent');
    const [run, user] = [fresh('run'), fresh('user')];
    const runs = await Promise.all(
      Array.from({ length: 60 }, () => decideOk({ agent_id: a, session_id: run, action: 'race.run', amount: 0.03 })),
    );
    expect(runs.filter((d) => d.effect === 'allow')).toHaveLength(33);
    const agents = [fresh('agent'), fresh('agent'), fresh('agent')];
    const users = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        decideOk({ agent_id: agents[i % 3], on_behalf_of: user, action: 'race.user' }),
      ),
    );
    expect(users.filter((d) => d.effect === 'allow')).toHaveLength(25);
    const left = (
      await rt.getOk(`/v1/budgets/remaining?${query({ agent_id: a, session_id: run, on_behalf_of: user })}`)
    ).data as Array<JsonObject>;
    expect(
      left
        .filter((r) => r.policy_id.startsWith('pol_race_'))
        .map((r) => [r.policy_id, r.consumed, r.held, r.remaining]),
    ).toEqual([
      ['pol_race_run', 0, 0.99, 0.01],
      ['pol_race_user', 25, 0, 0],
    ]);
  });

  it('a user budget is shared by every agent acting for the user; exhausted, it denies them all, not other users', async () => {
    await install([
      {
        id: 'pol_user',
        effect: 'allow',
        actions: ['payments.charge', 'mail.send'],
        budget: { unit: 'USD', limit: 10, period: 'monthly', scope: 'user' },
      },
    ]);
    const [x, y, z] = [fresh('agent'), fresh('agent'), fresh('agent')];
    const [u1, u2] = [fresh('user'), fresh('user')];
    const d1 = await decideOk({ agent_id: x, on_behalf_of: u1, action: 'payments.charge', amount: 6 });
    expect(d1).toMatchObject({ effect: 'allow', on_behalf_of: u1 });
    // Held 6 of 10: another agent for the same user cannot hold 5.
    expect(await decideOk({ agent_id: y, on_behalf_of: u1, action: 'payments.charge', amount: 5 })).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
      policy_id: 'pol_user',
    });
    const d2 = await decideOk({ agent_id: y, on_behalf_of: u1, action: 'payments.charge', amount: 4 });
    expect(d2.effect).toBe('allow');
    expect((await resolve(d1.id, 'confirm')).statusCode).toBe(200);
    // Y's confirm crosses the line: the event names Y.
    expect((await resolve(d2.id, 'confirm')).statusCode).toBe(200);
    const [exceeded] = (await eventsOf('pol_user')).filter(
      (e) => e.type === 'budget.exceeded' && e.data.on_behalf_of === u1,
    );
    expect(exceeded!.data).toMatchObject({
      scope: 'user',
      on_behalf_of: u1,
      agent_id: y,
      budget_consumed: 10,
      budget_limit: 10,
      budget_unit: 'USD',
    });
    expect(exceeded!.data.session_id).toBeUndefined();
    // Every agent acting for u1 is now denied, for any action; u2 is not.
    expect(await decideOk({ agent_id: z, on_behalf_of: u1, action: 'mail.send', amount: 0 })).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
      policy_id: 'pol_user',
    });
    expect(await decideOk({ agent_id: x, on_behalf_of: u1, action: 'payments.charge', amount: 0 })).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
    });
    expect(await decideOk({ agent_id: z, on_behalf_of: u2, action: 'mail.send', amount: 1 })).toMatchObject({
      effect: 'allow',
    });
    // The agents themselves, for nobody in particular: the user budget needs on_behalf_of (400), and does not block them.
    const missing = await postDecision(rt, { agent_id: z, action: 'mail.send', amount: 1 });
    expect(missing.statusCode).toBe(400);
    expect(json(missing).error).toMatchObject({ code: 'validation.missing_field' });
    expect(json(missing).error.message).toContain('on_behalf_of');

    const rows = (await rt.getOk(`/v1/budgets?${query({ on_behalf_of: u1 })}`)).data as Array<JsonObject>;
    expect(rows).toEqual([
      expect.objectContaining({
        policy_id: 'pol_user',
        scope: 'user',
        agent_id: null,
        session_id: null,
        on_behalf_of: u1,
        consumed: 10,
        held: 0,
        status: 'exceeded',
      }),
    ]);
    const remaining = (await rt.getOk(`/v1/budgets/remaining?${query({ agent_id: z, on_behalf_of: u2 })}`)).data;
    expect(remaining).toEqual([
      {
        policy_id: 'pol_user',
        unit: 'USD',
        scope: 'user',
        limit: 10,
        consumed: 0,
        held: 1,
        remaining: 9,
        period_resets_at: rows[0]!.period_resets_at,
      },
    ]);
  });

  it('tokens and USD together: amounts per unit held, confirmed per unit; amount alone, a missing unit or a missing session answer 400', async () => {
    await install([
      {
        id: 'pol_usd_run',
        effect: 'allow',
        actions: ['llm.call'],
        budget: { unit: 'USD', limit: 5, period: 'daily', scope: 'session' },
      },
      {
        id: 'pol_tok_run',
        effect: 'allow',
        actions: ['llm.call'],
        budget: { unit: 'tokens', limit: 10_000, period: 'daily', scope: 'session' },
      },
    ]);
    const a = fresh('agent');
    const s = fresh('run');
    const both = await decideOk({
      agent_id: a,
      session_id: s,
      action: 'llm.call',
      amounts: { USD: 0.12, tokens: 3000 },
    });
    expect(both).toMatchObject({
      effect: 'allow',
      metadata: { matched_policy_ids: expect.arrayContaining(['pol_usd_run', 'pol_tok_run']) },
    });
    const left = async () =>
      (await rt.getOk(`/v1/budgets/remaining?${query({ agent_id: a, session_id: s })}`)).data as Array<JsonObject>;
    expect((await left()).map((r) => [r.policy_id, r.unit, r.scope, r.held, r.remaining])).toEqual([
      ['pol_tok_run', 'tokens', 'session', 3000, 7000],
      ['pol_usd_run', 'USD', 'session', 0.12, 4.88],
    ]);
    expect(Object.keys((await left())[0]!).sort()).toEqual([
      'consumed',
      'held',
      'limit',
      'period_resets_at',
      'policy_id',
      'remaining',
      'scope',
      'unit',
    ]);

    // Confirm with amount alone on two units: 400 naming them; with amounts per unit: each consumed.
    const alone = await resolve(both.id, 'confirm', { amount: 0.1 });
    expect(alone.statusCode).toBe(400);
    expect(json(alone).error.code).toBe('validation.invalid_field');
    expect(json(alone).error.message).toContain('USD, tokens');
    expect((await resolve(both.id, 'confirm', { amounts: { USD: 0.1, tokens: 2500 } })).statusCode).toBe(200);
    expect((await left()).map((r) => [r.unit, r.consumed, r.held, r.remaining])).toEqual([
      ['tokens', 2500, 0, 7500],
      ['USD', 0.1, 0, 4.9],
    ]);

    // Two held units, only amount: 400 validation.invalid_field naming the units; nothing held.
    const r1 = await postDecision(rt, { agent_id: a, session_id: s, action: 'llm.call', amount: 1 });
    expect(r1.statusCode).toBe(400);
    expect(json(r1).error).toMatchObject({ code: 'validation.invalid_field' });
    expect(json(r1).error.message).toContain('USD, tokens');
    // A unit missing from amounts: 400 validation.missing_field at /amounts/tokens.
    const r2 = await postDecision(rt, { agent_id: a, session_id: s, action: 'llm.call', amounts: { USD: 1 } });
    expect(r2.statusCode).toBe(400);
    expect(json(r2).error).toMatchObject({ code: 'validation.missing_field' });
    expect(JSON.stringify(json(r2).error)).toContain('/amounts/tokens');
    // No session_id for a session budget: 400 validation.missing_field.
    const r3 = await postDecision(rt, { agent_id: a, action: 'llm.call', amounts: { USD: 1, tokens: 1 } });
    expect(r3.statusCode).toBe(400);
    expect(json(r3).error).toMatchObject({ code: 'validation.missing_field' });
    expect(json(r3).error.message).toContain('session_id');
    // A unit that is not a currency or tokens, a negative amount: 400 at validation.
    for (const amounts of [{ calls: 1 }, { USD: -1 }, { usd: 1 }]) {
      const bad = await postDecision(rt, { agent_id: a, session_id: s, action: 'llm.call', amounts });
      expect(bad.statusCode, JSON.stringify(amounts)).toBe(400);
    }
    // Tokens past the limit: deny budget.exceeded (7500 left).
    expect(
      await decideOk({ agent_id: a, session_id: s, action: 'llm.call', amounts: { USD: 0.01, tokens: 7501 } }),
    ).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
      policy_id: 'pol_tok_run',
    });
    expect((await left()).map((r) => r.held)).toEqual([0, 0]);
    // The preview takes amounts too and uses nothing.
    const preview = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions/preview',
        payload: { agent_id: a, session_id: s, action: 'llm.call', amounts: { USD: 0.01, tokens: 7500 } },
      }),
    );
    expect(preview).toMatchObject({ effect: 'allow' });
    expect((await left()).map((r) => r.held)).toEqual([0, 0]);
    // One held unit in amounts, confirmed by amount: fine.
    await install([
      {
        id: 'pol_tok_only',
        effect: 'allow',
        actions: ['llm.embed'],
        budget: { unit: 'tokens', limit: 100, period: 'daily', scope: 'session' },
      },
    ]);
    const tok = await decideOk({ agent_id: a, session_id: s, action: 'llm.embed', amounts: { tokens: 40 } });
    expect(tok.effect).toBe('allow');
    expect((await resolve(tok.id, 'confirm', { amount: 30 })).statusCode).toBe(200);
    expect((await left()).find((r) => r.policy_id === 'pol_tok_only')).toMatchObject({
      consumed: 30,
      held: 0,
      remaining: 70,
    });
    const tok2 = await decideOk({ agent_id: a, session_id: s, action: 'llm.embed', amount: 70 });
    expect(tok2.effect).toBe('allow');
    const over = await resolve(tok2.id, 'confirm', { amounts: { tokens: 71 } });
    expect(over.statusCode).toBe(400);
    expect(json(over).error.code).toBe('validation.invalid_field');
  });

  it('amount together with amounts: 400 validation.invalid_field unless they agree for the one held unit, nothing held', async () => {
    await install([
      {
        id: 'pol_agree',
        effect: 'allow',
        actions: ['pay.small'],
        condition: 'amount <= 5',
        budget: { unit: 'USD', limit: 1000, period: 'daily' },
      },
      {
        id: 'pol_two_usd',
        effect: 'allow',
        actions: ['llm.both'],
        budget: { unit: 'USD', limit: 1000, period: 'daily' },
      },
      {
        id: 'pol_two_tok',
        effect: 'allow',
        actions: ['llm.both'],
        budget: { unit: 'tokens', limit: 100_000, period: 'daily' },
      },
    ]);
    const a = fresh('agent');
    const held = async () =>
      ((await rt.getOk(`/v1/budgets/remaining?${query({ agent_id: a })}`)).data as Array<JsonObject>).map((r) => [
        r.policy_id,
        r.consumed,
        r.held,
      ]);
    const refused = async (body: Record<string, unknown>) => {
      const r = await postDecision(rt, { agent_id: a, ...body });
      expect(r.statusCode, `${JSON.stringify(body)}: ${r.body}`).toBe(400);
      expect(json(r).error).toMatchObject({ code: 'validation.invalid_field', details: [{ path: '/amount' }] });
    };
    // The condition reads amount (1), the budget would hold amounts.USD (900): refused, nothing held, nothing stored.
    await refused({ action: 'pay.small', amount: 1, amounts: { USD: 900 } });
    await refused({ action: 'pay.small', amount: 1, amounts: { EUR: 1 } });
    await refused({ action: 'llm.both', amount: 1, amounts: { USD: 1, tokens: 1 } });
    expect(await held()).toEqual(
      [
        ['pol_two_usd', 0, 0],
        ['pol_two_tok', 0, 0],
        ['pol_agree', 0, 0],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
    expect((await rt.getOk(`/v1/decisions?agent_id=${a}`)).data).toEqual([]);
    // Preview answers the same 400.
    const preview = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions/preview',
      payload: { agent_id: a, action: 'pay.small', amount: 1, amounts: { USD: 900 } },
    });
    expect(preview.statusCode).toBe(400);
    expect(json(preview).error.code).toBe('validation.invalid_field');
    // They agree: held once.
    const ok = await decideOk({ agent_id: a, action: 'pay.small', amount: 4, amounts: { USD: 4 } });
    expect(ok.effect).toBe('allow');
    expect((await held()).find((r) => r[0] === 'pol_agree')).toEqual(['pol_agree', 0, 4]);
    // The confirm too: amount 1 with amounts.USD 3 disagree; 400 and the hold stays.
    const bad = await resolve(ok.id, 'confirm', { amount: 1, amounts: { USD: 3 } });
    expect(bad.statusCode, bad.body).toBe(400);
    expect(json(bad).error.code).toBe('validation.invalid_field');
    expect((await rt.getOk(`/v1/decisions/${ok.id}`)).status).toBe('pending');
    expect((await held()).find((r) => r[0] === 'pol_agree')).toEqual(['pol_agree', 0, 4]);
    expect((await resolve(ok.id, 'confirm', { amount: 3, amounts: { USD: 3 } })).statusCode).toBe(200);
    expect((await held()).find((r) => r[0] === 'pol_agree')).toEqual(['pol_agree', 3, 0]);
  });

  it("under approval: a session calls budget is consumed on approval on that session's row, a user USD hold kept and consumed on confirm", async () => {
    await install([
      {
        id: 'pol_appr_run',
        effect: 'review',
        actions: ['deploy.run'],
        budget: { unit: 'calls', limit: 1, period: 'daily', scope: 'session' },
        approval: { required: true, timeout_seconds: 600 },
      },
      {
        id: 'pol_appr_user',
        effect: 'review',
        actions: ['deploy.run'],
        budget: { unit: 'USD', limit: 50, period: 'daily', scope: 'user' },
        approval: { required: true, timeout_seconds: 600 },
      },
    ]);
    const reviewer = await rt.keyWith(['reviews:write']);
    const a = fresh('agent');
    const [s, u] = [fresh('run'), fresh('user')];
    const left = async () =>
      (await rt.getOk(`/v1/budgets/remaining?${query({ agent_id: a, session_id: s, on_behalf_of: u })}`)).data.map(
        (r: JsonObject) => [r.policy_id, r.consumed, r.held],
      );
    const d = await decideOk({ agent_id: a, session_id: s, on_behalf_of: u, action: 'deploy.run', amount: 20 });
    expect(d.status).toBe('awaiting_approval');
    expect(await left()).toEqual([
      ['pol_appr_run', 0, 0],
      ['pol_appr_user', 0, 20],
    ]);
    const approved = await rt.call(reviewer, {
      method: 'POST',
      url: `/v1/decisions/${d.id}/review`,
      payload: { verdict: 'approve', reviewer: 'ops' },
    });
    expect(approved.statusCode, approved.body).toBe(200);
    expect(await left()).toEqual([
      ['pol_appr_run', 1, 0],
      ['pol_appr_user', 0, 20],
    ]);
    expect((await resolve(d.id, 'confirm', { amount: 15 })).statusCode).toBe(200);
    expect(await left()).toEqual([
      ['pol_appr_run', 1, 0],
      ['pol_appr_user', 15, 0],
    ]);
    // The session's one call is used: that session is denied; another session of the agent awaits approval.
    expect(
      await decideOk({ agent_id: a, session_id: s, on_behalf_of: u, action: 'deploy.run', amount: 1 }),
    ).toMatchObject({
      effect: 'deny',
      reason: 'budget.exceeded',
      policy_id: 'pol_appr_run',
    });
    expect(
      await decideOk({ agent_id: a, session_id: fresh('run'), on_behalf_of: u, action: 'deploy.run', amount: 1 }),
    ).toMatchObject({ status: 'awaiting_approval' });
  });

  it('GET /v1/budgets/remaining: budgets_read, agent_id required, a session or user budget only with its key, isolated per tenant', async () => {
    await install([
      {
        id: 'pol_r_agent',
        effect: 'allow',
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: 3, period: 'daily' },
      },
      {
        id: 'pol_r_session',
        effect: 'allow',
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: 5, period: 'daily', scope: 'session' },
      },
      {
        id: 'pol_r_user',
        effect: 'allow',
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: 7, period: 'daily', scope: 'user' },
      },
      {
        id: 'pol_r_other',
        effect: 'allow',
        agents: ['someone-else'],
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: 1, period: 'daily' },
      },
    ]);
    const a = fresh('agent');
    const [s, u] = [fresh('run'), fresh('user')];
    await decideOk({ agent_id: a, session_id: s, on_behalf_of: u, action: 'orders.read' });
    const of = async (params: Record<string, string>, key = rt.testKey) =>
      (await rt.getOk(`/v1/budgets/remaining?${query(params)}`, key)).data as Array<JsonObject>;
    expect((await of({ agent_id: a })).map((r) => [r.policy_id, r.remaining])).toEqual([['pol_r_agent', 2]]);
    expect(
      (await of({ agent_id: a, session_id: s, on_behalf_of: u })).map((r) => [
        r.policy_id,
        r.scope,
        r.consumed,
        r.remaining,
      ]),
    ).toEqual([
      ['pol_r_agent', 'agent', 1, 2],
      ['pol_r_session', 'session', 1, 4],
      ['pol_r_user', 'user', 1, 6],
    ]);
    // Another agent for the same user shares the user budget only.
    expect(
      (await of({ agent_id: fresh('agent'), session_id: s, on_behalf_of: u })).map((r) => [r.policy_id, r.remaining]),
    ).toEqual([
      ['pol_r_agent', 3],
      ['pol_r_session', 5],
      ['pol_r_user', 6],
    ]);
    expect(await rt.getOk(`/v1/budgets/remaining?${query({ agent_id: a })}`)).toEqual({
      object: 'list',
      data: expect.any(Array),
    });
    expect((await rt.call(rt.testKey, { method: 'GET', url: '/v1/budgets/remaining' })).statusCode).toBe(400);
    const noScope = await rt.keyWith(['decisions:read']);
    const denied = await rt.call(noScope, { method: 'GET', url: `/v1/budgets/remaining?agent_id=${a}` });
    expect(denied.statusCode).toBe(403);
    expect((await of({ agent_id: a, session_id: s, on_behalf_of: u }, rt.otherKey)).map((r) => r.consumed)).toEqual([]);
  });
});
