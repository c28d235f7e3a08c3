/**
 * The service's history values equal the reference meaning (docs/history.md),
 * on both stores: for random sequences of decisions (actions, agents, sessions,
 * users, resources, context values, amounts, confirms, the clock moving), every
 * value a decision's `metadata.history` lists equals the compiler's reference
 * (compiler/history/reference.ts historyValueOf) computed from the decision log
 * as answered before it, and its effect equals the table's evaluation with the
 * reference's values.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluate, type EvaluationInput } from '../../compiler/index.js';
import { historyProbe, type HistoryProbe } from '../../compiler/history/probe.js';
import { historyValueOf, historyValuesOf, type EarlierDecision } from '../../compiler/history/reference.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { decide } from '../helpers/kit.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

interface Step {
  action: string;
  agent: number;
  session: number;
  user: number;
  resource: string | null;
  context: Record<string, unknown> | null;
  amount: number;
  /** Seconds the clock moves before this decision. */
  advance: number;
  /** Confirm this decision (when allowed) with this amount. */
  confirm: number | null;
}

const step = fc.record<Step>({
  action: fc.constantFrom('h.read', 'h.write', 'h.pay', 'h.mail', 'h.lock'),
  agent: fc.nat(2),
  session: fc.nat(2),
  user: fc.nat(1),
  resource: fc.option(fc.constantFrom('doc:1', 'doc:2'), { nil: null }),
  context: fc.option(fc.record({ to: fc.option(fc.constantFrom('a@x', 'b@x'), { nil: null }) }, { requiredKeys: [] }), {
    nil: null,
  }),
  amount: fc.integer({ min: 1, max: 30 }),
  advance: fc.constantFrom(0, 0, 1, 30, 200, 400),
  confirm: fc.option(fc.integer({ min: 0, max: 30 }), { nil: null }),
});

describe.each(STORE_KINDS)('history values equal the reference computed from the decision log (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_rw', effect: 'allow', actions: ['h.read', 'h.write'], condition: "history.count('h.*', '10m') < 4" },
      {
        id: 'pol_pay',
        effect: 'allow',
        actions: ['h.pay'],
        condition: "history.sum('h.pay', '15m', 'user') + amount <= 60",
      },
      {
        id: 'pol_mail',
        effect: 'allow',
        actions: ['h.mail'],
        condition:
          "history.count('h.mail', '1h', 'agent', ['context.to']) < 2 && history.exists('h.read', '5m', 'session', ['resource'])",
      },
      {
        id: 'pol_lock',
        priority: 10,
        effect: 'deny',
        actions: ['h.*'],
        condition: "history.denied(['h.read', 'h.write', 'h.pay'], '5m', 'agent') >= 3",
      },
      {
        id: 'pol_lock_all',
        effect: 'allow',
        actions: ['h.lock'],
        condition: "history.count('*', '2m', 'environment') < 6",
      },
    ]);
  });
  afterAll(() => rt.close());

  /** Every decision answered so far, as history reads it (a run starts two hours after the last: nothing of it counts). */
  const log: EarlierDecision[] = [];
  let run = 0;

  it('for random sequences of decisions, metadata.history equals historyValueOf over the log, and the effect follows', async () => {
    const { table } = await rt.services.policySets.get(rt.accountId, 'test');
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 18 }), async (steps) => {
        run++;
        rt.clock.advance(7200);
        for (const s of steps) {
          rt.clock.advance(s.advance);
          const nowMs = rt.clock.now();
          const request: EvaluationInput = {
            agent_id: `bot-${run}-${s.agent}`,
            action: s.action,
            resource: s.resource,
            amount: s.amount,
            session_id: `run-${run}-${s.session}`,
            on_behalf_of: `user-${run}-${s.user}`,
            context: s.context,
          };
          const d = await decide(rt, { ...request, context: s.context ?? undefined });
          const readings = ((d.metadata as JsonObject).history ?? []) as Array<{
            fn: HistoryProbe['fn'];
            actions: string[];
            window: string;
            scope: HistoryProbe['scope'];
            match?: string[];
            value: number;
          }>;
          expect(readings.length).toBeGreaterThan(0);
          for (const r of readings) {
            const probe = historyProbe(r.fn, r.actions, r.window, r.scope, r.match ?? []);
            expect(
              r.value,
              `${r.fn}(${r.actions}, ${r.window}, ${r.scope}, ${r.match ?? []}) for ${JSON.stringify(request)}`,
            ).toBe(historyValueOf(probe, request, log, nowMs));
          }
          expect(d.effect).toBe(evaluate(table, { ...request, history: historyValuesOf(request, log, nowMs) }).effect);
          const entry: EarlierDecision = {
            ...request,
            agent_id: request.agent_id,
            effect: d.effect === 'deny' ? 'deny' : 'allow',
            at_ms: nowMs,
          };
          log.push(entry);
          if (s.confirm !== null && d.effect === 'allow') {
            const r = await rt.call(rt.testKey, {
              method: 'POST',
              url: `/v1/decisions/${d.id}/confirm`,
              payload: { amount: Math.min(s.confirm, s.amount) },
            });
            expect(r.statusCode, r.body).toBe(200);
            entry.confirmed_amount = Math.min(s.confirm, s.amount);
          }
        }
      }),
      { numRuns: 12 },
    );
  }, 240_000);
});
