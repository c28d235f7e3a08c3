import { describe, expect, it } from 'vitest';
import { evaluate, evaluateLinear } from '../../../compiler/table/evaluate.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';
import { tableFromYaml } from './helpers.js';

const table = tableFromYaml(`
policies:
  - name: refunds-small
    priority: 100
    effect: allow
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
    condition: "amount <= 50"
  - name: refunds-large
    priority: 100
    effect: review
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
    condition: "amount > 50"
  - name: no-deletes
    priority: 1
    effect: deny
    actions: ["*.delete"]
  - name: read-orders
    priority: 50
    effect: allow
    agents: ["support-1"]
    actions: ["orders.read"]
    resources: ["order:*"]
  - name: read-orders-review
    priority: 50
    effect: review
    agents: ["support-1"]
    actions: ["orders.read"]
    resources: ["order:vip-*"]
  - name: legacy
    state: disabled
    effect: allow
    actions: ["legacy.export"]
  - name: reports
    effect: allow
    actions: ["reports.*"]
    resources: ["report:*"]
  - name: reports-deny-secret
    effect: deny
    actions: ["reports.read"]
    condition: "context.classification == 'secret'"
`);

const decide = (request: EvaluationInput) => {
  const indexed = evaluate(table, request);
  expect(evaluateLinear(table, request)).toEqual(indexed);
  return { ...indexed, matched: indexed.matched.map((p) => p.id) };
};

describe('evaluate: steps 4-6 of the evaluation order', () => {
  it('allows through the matching policy with reason policy.matched', () => {
    expect(decide({ agent_id: 'support-7', action: 'payments.refund', resource: 'order:1', amount: 20 })).toEqual({
      effect: 'allow',
      reason: 'policy.matched',
      policy_id: 'pol_refunds_small',
      matched: ['pol_refunds_small'],
      warnings: [],
    });
  });

  it('uses the condition to choose between policies', () => {
    const d = decide({ agent_id: 'support-7', action: 'payments.refund', resource: 'order:1', amount: 80 });
    expect(d).toMatchObject({ effect: 'review', policy_id: 'pol_refunds_large', matched: ['pol_refunds_large'] });
  });

  it('denies policy.not_found when nothing matches the agent and action', () => {
    expect(decide({ agent_id: 'sales-1', action: 'payments.refund', resource: 'order:1', amount: 1 })).toMatchObject({
      effect: 'deny',
      reason: 'policy.not_found',
      policy_id: null,
      matched: [],
    });
  });

  it('denies policy.not_found when candidates all drop out on their condition', () => {
    expect(decide({ agent_id: 'support-7', action: 'payments.refund', resource: 'order:1' })).toMatchObject({
      effect: 'deny',
      reason: 'policy.not_found',
    });
  });

  it('denies resource.not_allowed when allow candidates all drop out on resource', () => {
    expect(
      decide({ agent_id: 'support-7', action: 'payments.refund', resource: 'invoice:1', amount: 5 }),
    ).toMatchObject({
      effect: 'deny',
      reason: 'resource.not_allowed',
    });
    // No resource at all against policies that name resources.
    expect(decide({ agent_id: 'support-1', action: 'orders.read' })).toMatchObject({ reason: 'resource.not_allowed' });
  });

  it('denies policy.disabled when only a disabled policy would have matched', () => {
    expect(decide({ agent_id: 'anyone', action: 'legacy.export' })).toMatchObject({
      effect: 'deny',
      reason: 'policy.disabled',
      policy_id: null,
    });
  });

  it('lets the lowest priority number win, and warns of the conflict', () => {
    const d = decide({ agent_id: 'support-1', action: 'orders.delete', resource: 'order:1' });
    expect(d).toMatchObject({ effect: 'deny', reason: 'policy.matched', policy_id: 'pol_no_deletes' });
    expect(d.warnings).toEqual([]);
  });

  it('breaks equal priority deny > review > allow and reports policy.conflict with every matched id', () => {
    const d = decide({ agent_id: 'support-1', action: 'orders.read', resource: 'order:vip-9' });
    expect(d.effect).toBe('review');
    expect(d.policy_id).toBe('pol_read_orders_review');
    expect(d.matched).toEqual(['pol_read_orders_review', 'pol_read_orders']);
    expect(d.warnings).toHaveLength(1);
    expect(d.warnings[0]).toMatchObject({
      code: 'policy.conflict',
      policy_ids: ['pol_read_orders_review', 'pol_read_orders'],
    });
    expect(d.warnings[0]!.message).toContain('pol_read_orders_review');
  });

  it('treats a missing context key as a false comparison', () => {
    expect(decide({ agent_id: 'x', action: 'reports.read', resource: 'report:1' })).toMatchObject({
      effect: 'allow',
      matched: ['pol_reports'],
    });
    const secret = decide({
      agent_id: 'x',
      action: 'reports.read',
      resource: 'report:1',
      context: { classification: 'secret' },
    });
    expect(secret).toMatchObject({ effect: 'deny', policy_id: 'pol_reports_deny_secret' });
    expect(secret.warnings[0]?.code).toBe('policy.conflict');
  });

  it('is not fooled by wildcard namespaces and verbs', () => {
    expect(decide({ agent_id: 'x', action: 'reports.export', resource: 'report:1' })).toMatchObject({
      effect: 'allow',
    });
    expect(decide({ agent_id: 'x', action: 'reporting.read', resource: 'report:1' })).toMatchObject({
      reason: 'policy.not_found',
    });
    expect(decide({ agent_id: 'x', action: 'anything.delete' })).toMatchObject({
      effect: 'deny',
      policy_id: 'pol_no_deletes',
    });
  });
});
