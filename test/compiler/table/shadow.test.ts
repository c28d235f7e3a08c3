/**
 * `state: shadow`: for enforcement a shadow policy does not exist (the decision is
 * exactly the one of the set without it), and the evaluation carries the outcome
 * with the shadow policies enabled when that differs in effect or reason.
 * Checked as a property against two plain compiles (the set without its shadow
 * policies, and with them enabled), on the index and the linear scan, through
 * explain and through a bundle; then the cases one by one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createBundle } from '../../../compiler/bundle/write.js';
import { loadBundle } from '../../../compiler/bundle/load.js';
import { compileItems } from '../../../compiler/compile.js';
import { readPolicyValue } from '../../../compiler/policy/read.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';
import type { DecisionTable } from '../../../compiler/table/build.js';
import { evaluate, evaluateLinear, evaluateWithShadow, type Evaluation } from '../../../compiler/table/evaluate.js';
import { explain } from '../../../compiler/table/explain.js';
import { tableFromYaml } from './helpers.js';

const AGENT_PATTERNS = ['a1', 'bot-*', '*-1', '*'];
const ACTIONS = ['pay.refund', 'pay.charge', 'orders.read'];
const ACTION_PATTERNS = [...ACTIONS, 'pay.*', '*.read', '*'];
const RESOURCE_PATTERNS = ['order:*', 'doc:*', '*'];
const CONDITIONS = ['amount <= 50', "context.tier == 'gold'", 'amount > 10'];

const policyArb = fc.record(
  {
    effect: fc.constantFrom('allow', 'deny', 'review'),
    priority: fc.constantFrom(1, 10, 50, 100),
    state: fc.constantFrom('enabled', 'enabled', 'disabled', 'shadow', 'shadow'),
    agents: fc.uniqueArray(fc.constantFrom(...AGENT_PATTERNS), { minLength: 1, maxLength: 2 }),
    actions: fc.uniqueArray(fc.constantFrom(...ACTION_PATTERNS), { minLength: 1, maxLength: 2 }),
    resources: fc.uniqueArray(fc.constantFrom(...RESOURCE_PATTERNS), { minLength: 1, maxLength: 2 }),
    condition: fc.constantFrom(...CONDITIONS),
  },
  { requiredKeys: ['effect', 'priority', 'state', 'actions'] },
);

const requestArb: fc.Arbitrary<EvaluationInput> = fc.record(
  {
    agent_id: fc.constantFrom('a1', 'bot-1', 'bot-2', 'x'),
    action: fc.constantFrom(...ACTIONS),
    resource: fc.constantFrom('order:1', 'doc:1', 'prod:db'),
    amount: fc.constantFrom(0, 20, 60),
    context: fc.constantFrom({}, { tier: 'gold' }),
  },
  { requiredKeys: ['agent_id', 'action'] },
);

function compile(values: Array<Record<string, unknown>>): DecisionTable {
  const items = values.flatMap((v, i) => {
    const r = readPolicyValue({ id: `pol_p${i}`, ...v });
    if (r.diagnostics.length) throw new Error(JSON.stringify(r.diagnostics));
    return r.items;
  });
  return compileItems(items, { lint: false }).table!;
}

/** What a decision is, without the shadow outcome, with policies by id. */
const core = (e: Evaluation) => ({
  effect: e.effect,
  reason: e.reason,
  policy_id: e.policy_id,
  matched: e.matched.map((p) => p.id),
  warnings: e.warnings,
});

describe('shadow policies (property)', () => {
  it('leave the decision exactly as without them, and report the outcome with them enabled when it differs', () => {
    fc.assert(
      fc.property(
        fc.array(policyArb, { minLength: 0, maxLength: 16 }),
        fc.array(requestArb, { minLength: 1, maxLength: 12 }),
        (values, requests) => {
          const table = compile(values);
          const ids = (pred: (state: unknown) => boolean) =>
            values.map((v, i) => ({ ...v, id: `pol_p${i}` })).filter((v) => pred(v.state));
          const without = compile(ids((s) => s !== 'shadow'));
          const enabled = compile(ids(() => true).map((v) => (v.state === 'shadow' ? { ...v, state: 'enabled' } : v)));
          const hasShadow = values.some((v) => v.state === 'shadow');
          expect(table.shadow === null).toBe(!hasShadow);
          const reloaded = loadBundle(JSON.parse(JSON.stringify(createBundle(table))));
          if (!reloaded.ok) throw new Error(JSON.stringify(reloaded.problems));
          for (const request of requests) {
            const d = evaluate(table, request);
            expect(core(d)).toEqual(core(evaluate(without, request)));
            const withShadow = evaluate(enabled, request);
            const differs = withShadow.effect !== d.effect || withShadow.reason !== d.reason;
            expect(d.shadow).toEqual(
              differs
                ? { effect: withShadow.effect, reason: withShadow.reason, policy_id: withShadow.policy_id }
                : undefined,
            );
            expect(core(evaluateWithShadow(table, request))).toEqual(core(withShadow));
            // The linear scan, explain and a bundle round-trip agree to the letter.
            expect(evaluateLinear(table, request)).toEqual(d);
            expect(explain(table, request).evaluation).toEqual(d);
            expect(evaluate(reloaded.table, request)).toEqual(d);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('shadow policies', () => {
  const SET = `policies:
  - { name: refunds, effect: allow, agents: ["support-*"], actions: [payments.refund], resources: ["order:*"] }
  - { name: big-refunds, state: shadow, priority: 10, effect: review, agents: ["support-*"], actions: [payments.refund], condition: "amount > 100" }
  - { name: credits, state: shadow, effect: allow, actions: [credits.issue], resources: ["customer:*"] }
  - { name: old-exports, state: disabled, effect: allow, actions: [reports.export] }
  - { name: new-exports, state: shadow, effect: allow, actions: [reports.export] }
`;
  const table = tableFromYaml(SET);
  const refund = { agent_id: 'support-1', action: 'payments.refund', resource: 'order:1' };

  it('changes no decision, and says what the shadow ones would decide', () => {
    const d = evaluate(table, { ...refund, amount: 500 });
    expect(core(d)).toEqual({
      effect: 'allow',
      reason: 'policy.matched',
      policy_id: 'pol_refunds',
      matched: ['pol_refunds'],
      warnings: [],
    });
    expect(d.shadow).toEqual({ effect: 'review', reason: 'policy.matched', policy_id: 'pol_big_refunds' });
  });

  it('adds nothing when the outcome with them is the same', () => {
    const d = evaluate(table, { ...refund, amount: 5 });
    expect(d).not.toHaveProperty('shadow');
    // The same effect and reason from another policy is no divergence either.
    const same = tableFromYaml(
      `${SET}  - { name: refunds-v2, state: shadow, priority: 1, effect: allow, actions: [payments.refund] }\n`,
    );
    expect(evaluate(same, { ...refund, amount: 5 })).not.toHaveProperty('shadow');
    expect(evaluateWithShadow(same, { ...refund, amount: 5 }).policy_id).toBe('pol_refunds_v2');
  });

  it('never make a decision policy.disabled: only a shadow policy matching is policy.not_found', () => {
    const d = evaluate(table, { agent_id: 'bot', action: 'credits.issue', resource: 'customer:1' });
    expect(core(d)).toMatchObject({ effect: 'deny', reason: 'policy.not_found', policy_id: null });
    expect(d.shadow).toEqual({ effect: 'allow', reason: 'policy.matched', policy_id: 'pol_credits' });
  });

  it('leave a disabled policy its policy.disabled, and lift it in the shadow outcome', () => {
    const d = evaluate(table, { agent_id: 'bot', action: 'reports.export' });
    expect(d.reason).toBe('policy.disabled');
    expect(d.shadow).toEqual({ effect: 'allow', reason: 'policy.matched', policy_id: 'pol_new_exports' });
  });

  it('count for resource.not_allowed only in the shadow outcome', () => {
    const d = evaluate(table, { agent_id: 'bot', action: 'credits.issue', resource: 'order:1' });
    expect(d.reason).toBe('policy.not_found');
    expect(d.shadow).toEqual({ effect: 'deny', reason: 'resource.not_allowed', policy_id: null });
  });

  it('cost nothing where there are none: no shadow part, no shadow field', () => {
    const plain = tableFromYaml('name: reads\neffect: allow\nactions: [orders.read]\n');
    expect(plain.shadow).toBeNull();
    expect(Object.keys(evaluate(plain, { agent_id: 'a', action: 'orders.read' }))).toEqual([
      'effect',
      'reason',
      'policy_id',
      'matched',
      'warnings',
    ]);
  });

  it('are marked in explain, with where they drop out when enabled', () => {
    const { evaluation, withShadow, trace } = explain(table, { ...refund, amount: 500 });
    expect(evaluation.shadow?.policy_id).toBe('pol_big_refunds');
    expect(withShadow?.matched.map((p) => p.id)).toEqual(['pol_big_refunds', 'pol_refunds']);
    expect(trace.find((t) => t.policy.id === 'pol_big_refunds')).toMatchObject({ outcome: 'matched', shadow: true });
    expect(trace.find((t) => t.policy.id === 'pol_refunds')).not.toHaveProperty('shadow');
    const small = explain(table, { ...refund, amount: 5 }).trace.find((t) => t.policy.id === 'pol_big_refunds');
    expect(small).toMatchObject({ outcome: 'condition', shadow: true });
  });

  it('are refused in a bundle whose enforcement index names them', () => {
    const bundle = createBundle(table);
    const position = bundle.policies.findIndex((p) => p.id === 'pol_credits');
    const row = bundle.table.rows.indexOf(position);
    const tampered = structuredClone(bundle);
    tampered.table.actions.exact.credits = {
      exact: { issue: { exact: {}, prefixed: {}, suffixed: {}, globs: [], any: [row] } },
      wildcard: null,
    };
    const loaded = loadBundle(tampered);
    expect(loaded.ok).toBe(false);
    expect(!loaded.ok && loaded.problems[0]!.message).toMatch(/indexes row \d+, a shadow policy, for enforcement/);
  });
});
