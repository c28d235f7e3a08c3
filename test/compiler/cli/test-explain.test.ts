import { describe, expect, it } from 'vitest';
import { runCli, tempTree } from './run-cli.js';

const POLICIES = `policies:
  - name: refund-small
    priority: 10
    effect: allow
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
    condition: "amount <= 50 && context.channel == 'chat'"
  - name: refund-review
    priority: 20
    effect: review
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
  - name: unused
    effect: allow
    actions: ["reports.read"]
`;

const TESTS = `name: refunds
cases:
  - name: small chat refund
    request: { agent_id: support-1, action: payments.refund, resource: "order:1", amount: 20, context: { channel: chat } }
    expect: { effect: allow, reason: policy.matched, policy: pol_refund_small, warnings: [policy.conflict] }
  - name: large refund reviewed
    request: { agent_id: support-1, action: payments.refund, resource: "order:1", amount: 80 }
    expect: { effect: review, policy: pol_refund_review, matched: [pol_refund_review] }
  - name: wrong resource
    request: { agent_id: support-1, action: payments.refund, resource: "invoice:1", amount: 5 }
    expect: { effect: deny, reason: resource.not_allowed, policy: null }
`;

describe('authz test', () => {
  it('passes a correct suite, prints a line per case and the totals', () => {
    const dir = tempTree({ 'refunds/policies.yaml': POLICIES, 'refunds/refunds.test.yaml': TESTS });
    const r = runCli(['test', '.'], dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain('PASS  small chat refund');
    expect(r.out).toMatch(/^3 passed, 0 failed$/m);
  });

  it('fails with a diff per failing case and exit 1', () => {
    const broken = TESTS.replace(
      'effect: review, policy: pol_refund_review',
      'effect: allow, policy: pol_refund_small',
    );
    const dir = tempTree({ 'policies.yaml': POLICIES, 'refunds.test.yaml': broken });
    const r = runCli(['test', '.'], dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/FAIL {2}large refund reviewed {2}\(refunds\.test\.yaml:\d+\)/);
    expect(r.out).toContain('- effect: allow\n        + effect: review');
    expect(r.out).toContain('- policy: pol_refund_small\n        + policy: pol_refund_review');
    expect(r.out).toMatch(/^2 passed, 1 failed$/m);
  });

  it('lists policies no case exercises with --coverage', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES, 'refunds.test.yaml': TESTS });
    const r = runCli(['test', '.', '--coverage'], dir);
    expect(r.out).toContain('coverage: 2/3 policies matched by at least one case');
    expect(r.out).toMatch(/not exercised: pol_unused \(policies\.yaml:\d+\)/);
    const json = JSON.parse(runCli(['test', '.', '--coverage', '--format', 'json'], dir).out);
    expect(json.coverage).toEqual({
      policies: 3,
      exercised: 2,
      percent: 66.6,
      not_exercised: ['pol_unused'],
      disabled_not_counted: 0,
    });
    expect(json.passed).toBe(3);
  });

  it('reports an invalid test file with positions and exits 1', () => {
    const dir = tempTree({
      'policies.yaml': POLICIES,
      'bad.test.yaml':
        'cases:\n  - name: x\n    request: { agent_id: a, action: "pay*.x" }\n    expect: { effect: maybe }\n',
    });
    const r = runCli(['test', '.'], dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/bad\.test\.yaml:3:\d+: cases\[0\]\.request\.action must be namespace\.verb/);
    expect(r.out).toMatch(/bad\.test\.yaml:4:\d+: cases\[0\]\.expect\.effect/);
  });

  it('honours a policies: list relative to the test file', () => {
    const dir = tempTree({
      'policies/refunds.yaml': POLICIES,
      'tests/refunds.test.yaml': `policies: [../policies]\n${TESTS}`,
    });
    expect(runCli(['test', 'tests'], dir).code).toBe(0);
  });

  it('runs the examples green', () => {
    const r = runCli(['test', 'examples']);
    expect(r.out).toMatch(/^\d+ passed, 0 failed$/m);
    expect(r.code).toBe(0);
  });
});

describe('authz explain', () => {
  it('explains the decision policy by policy', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES });
    const r = runCli(
      [
        'explain',
        '.',
        '--agent',
        'support-1',
        '--action',
        'payments.refund',
        '--resource',
        'order:9',
        '--amount',
        '80',
        '--context',
        '{"channel":"chat"}',
      ],
      dir,
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^decision: review \(policy\.matched\) by pol_refund_review$/m);
    expect(r.out).toMatch(
      /- pol_refund_small \(priority 10, allow\) dropped at condition: condition is false: .*\(amount = 80, context\.channel = "chat"\)/,
    );
    expect(r.out).toMatch(/=> pol_refund_review \(priority 20, review\) matched/);
    expect(r.out).toContain('1 other policy does not match the agent or action (--all lists them)');
    const all = runCli(['explain', '.', '--agent', 'support-1', '--action', 'payments.refund', '--all'], dir);
    expect(all.out).toMatch(
      /pol_unused .* dropped at action: action payments\.refund matches none of \[reports\.read\]/,
    );
    expect(all.out).toMatch(/^decision: deny \(resource\.not_allowed\)$/m);
  });

  it('answers JSON', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES });
    const r = runCli(['explain', '.', '--agent', 'sales-1', '--action', 'payments.refund', '--format', 'json'], dir);
    const parsed = JSON.parse(r.out);
    expect(parsed.decision).toMatchObject({ effect: 'deny', reason: 'policy.not_found', matched: [] });
    expect(parsed.policies).toEqual([]);
  });

  it('exits 2 on a bad request', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES });
    expect(runCli(['explain', '.', '--agent', 'a', '--action', 'pay*.x'], dir).code).toBe(2);
    expect(runCli(['explain', '.', '--agent', 'a', '--action', 'a.b', '--context', '{nope'], dir).code).toBe(2);
    expect(runCli(['explain', '.', '--action', 'a.b'], dir).code).toBe(2);
    expect(runCli(['explain', '.', '--agent', 'a', '--action', 'a.b', '--amount', '-1'], dir).code).toBe(2);
  });
});
