/**
 * A decision whose limits go to the store is written in the same statement as
 * them (runtime/store/functions/authz_decide_batch.sql), on both stores: a
 * known agent's budgeted or history-reading decision costs one store statement
 * (none of the decision writer's), and is stored exactly as answered. When the
 * limits change the decision (a budget warning, a budget exceeded), or it has
 * other writes (a new agent's registration, a session's labels), the decision
 * writer stores what was answered instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../../compiler/policy/types.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { agent, decide } from '../helpers/kit.js';
import { parse, value } from '../helpers/prometheus.js';
import type { JsonObject } from '../helpers/json.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';

const TOKEN = 'metrics-token-one-statement-0123456789';

type PolicyInput = Partial<Policy> & Pick<Policy, 'effect' | 'actions'>;

describe.each(STORE_KINDS)('a decision written with its limits (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { metricsToken: TOKEN } });
  });
  afterAll(() => rt.close());

  /** Statements and items of each store batch of the decision path so far. */
  const batches = async () => {
    const r = await rt.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    const samples = parse(r.body);
    const of = (batch: string) => ({
      statements: value(samples, 'authz_store_batch_size_count', { batch }),
      items: value(samples, 'authz_store_batch_size_sum', { batch }),
    });
    return { decisions: of('decisions'), limits: of('limits') };
  };
  /** The decision as stored, next to the answer (the permit token is never stored). */
  const expectStoredAsAnswered = async (answer: JsonObject) => {
    const stored = await rt.getOk(`/v1/decisions/${answer.id}`);
    const { permit_token: _token, ...answered } = answer;
    const { permit_token: storedToken, ...read } = stored;
    expect(storedToken ?? null).toBeNull();
    expect(read).toEqual(answered);
    const events = (await rt.getOk(`/v1/events?type=decision.${answer.effect}&limit=100`)).data as JsonObject[];
    expect(events.filter((e) => JSON.stringify(e.data).includes(answer.id as string))).toHaveLength(1);
  };
  const install = (policies: PolicyInput[]) => rt.setPolicies(policies);

  it("a known agent: calls and USD budgets and history.count each cost one statement (history under its lease: the writer's), the decision stored as answered", async () => {
    await install([
      {
        id: 'pol_calls',
        effect: 'allow',
        actions: ['calls.use'],
        budget: { unit: 'calls', limit: 100, period: 'daily' },
      },
      { id: 'pol_usd', effect: 'allow', actions: ['usd.spend'], budget: { unit: 'USD', limit: 1000, period: 'daily' } },
      { id: 'pol_hist', effect: 'allow', actions: ['hist.go'], condition: "history.count('hist.go', '1h') < 3" },
      { id: 'pol_free', effect: 'allow', actions: ['free.read'] },
    ]);
    const a = agent('one-statement');
    await decide(rt, { agent_id: a, action: 'free.read' }); // registers the agent (the writer)
    const before = await batches();
    const answers: JsonObject[] = [];
    answers.push(await decide(rt, { agent_id: a, action: 'calls.use' }));
    answers.push(await decide(rt, { agent_id: a, action: 'usd.spend', amount: 2.5 }));
    for (let i = 0; i < 4; i++)
      answers.push(await decide(rt, { agent_id: a, action: 'hist.go', session_id: 'run-one-statement' }));
    const after = await batches();
    expect(answers.map((d) => d.effect)).toEqual(['allow', 'allow', 'allow', 'allow', 'allow', 'deny']);
    // The budgeted decisions rode their limits' statement; the history decisions were decided from the
    // session's history lease (docs/history.md#leases) and written by the decision writer with their
    // entries, one statement each, without the limits gate.
    expect(after.limits.items - before.limits.items).toBe(2);
    expect(after.decisions.items - before.decisions.items).toBe(4);
    expect(after.decisions.statements - before.decisions.statements).toBe(4);
    for (const answer of answers) await expectStoredAsAnswered(answer);
    expect((answers[5]!.metadata as JsonObject).history[0].value).toBe(3);
    // The budgets moved as before: one call consumed, 2.5 USD held.
    const budgets = (await rt.getOk(`/v1/budgets?agent_id=${a}`)).data as JsonObject[];
    expect(budgets.find((b) => b.policy_id === 'pol_calls')!.consumed).toBe(1);
    expect(budgets.find((b) => b.policy_id === 'pol_usd')!.held).toBe(2.5);
  });

  it('when the limits change the decision (a warning, a budget exceeded) the writer stores what was answered', async () => {
    await install([
      {
        id: 'pol_small',
        effect: 'allow',
        actions: ['small.use'],
        budget: { unit: 'calls', limit: 3, period: 'daily', threshold_alert: 0.5 },
      },
      { id: 'pol_free', effect: 'allow', actions: ['free.read'] },
    ]);
    const a = agent('one-statement-warn');
    await decide(rt, { agent_id: a, action: 'free.read' });
    const before = await batches();
    const answers: JsonObject[] = [];
    for (let i = 0; i < 4; i++) answers.push(await decide(rt, { agent_id: a, action: 'small.use' }));
    const after = await batches();
    expect(answers.map((d) => d.effect)).toEqual(['allow', 'allow', 'allow', 'deny']);
    const warned = answers.map((d) =>
      (d.metadata.warnings as Array<{ code: string }>).some((w) => w.code === 'budget.below_threshold'),
    );
    expect(warned).toEqual([false, true, false, false]);
    expect(answers[3]!.reason).toBe('budget.exceeded');
    // The first and third (nothing changed) rode the limits' statement; the warned one and the denial the writer.
    expect(after.decisions.items - before.decisions.items).toBe(2);
    for (const answer of answers) await expectStoredAsAnswered(answer);
  });

  it('a new agent (its registration) and a session gaining labels are written by the writer, with the decision', async () => {
    await install([
      {
        id: 'pol_label',
        effect: 'allow',
        actions: ['files.read'],
        labels: ['private'],
        budget: { unit: 'calls', limit: 100, period: 'daily' },
      },
    ]);
    const a = agent('one-statement-new');
    const before = await batches();
    const first = await decide(rt, { agent_id: a, action: 'files.read', session_id: 'run-labels-1' });
    const second = await decide(rt, { agent_id: a, action: 'files.read', session_id: 'run-labels-1' });
    const after = await batches();
    // The first registers the agent and adds the label: the writer. The second adds nothing new: its limits' statement.
    expect(after.decisions.items - before.decisions.items).toBe(1);
    await expectStoredAsAnswered(first);
    await expectStoredAsAnswered(second);
    expect((await rt.getOk(`/v1/agents/${a}`)).id ?? a).toBeTruthy();
    const session = await rt.getOk('/v1/sessions/run-labels-1');
    expect(
      (session.labels as Array<{ label: string; decision_id: string }>).map((l) => [l.label, l.decision_id]),
    ).toEqual([['private', first.id]]);
    expect(session.decisions).toBe(2);
  });
});
