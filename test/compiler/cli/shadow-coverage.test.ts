/** `authz explain` with shadow policies, and `authz test --coverage / --min-coverage / --format github`. */
import { describe, expect, it } from 'vitest';
import { runCli, tempTree } from './run-cli.js';

const POLICIES = `policies:
  - name: refund-small
    effect: allow
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
    condition: "amount <= 50"
  - name: refund-small-v2
    state: shadow
    priority: 90
    effect: deny
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
    condition: "amount > 30"
  - name: exports
    state: disabled
    effect: allow
    actions: ["reports.export"]
  - name: reads
    effect: allow
    actions: ["orders.read"]
`;

const TESTS = `cases:
  - name: small refund
    request: { agent_id: support-1, action: payments.refund, resource: "order:1", amount: 20 }
    expect: { effect: allow, policy: pol_refund_small }
  - name: a 40 refund is still allowed (the shadow deny does not enforce)
    request: { agent_id: support-1, action: payments.refund, resource: "order:1", amount: 40 }
    expect: { effect: allow, policy: pol_refund_small, matched: [pol_refund_small] }
`;

describe('authz explain with shadow policies', () => {
  it('marks them and prints the shadow outcome when it differs', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES });
    const args = [
      'explain',
      '.',
      '--agent',
      'support-1',
      '--action',
      'payments.refund',
      '--resource',
      'order:1',
      '--amount',
    ];
    const r = runCli([...args, '40'], dir);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /^decision: allow \(policy\.matched\) by pol_refund_small\nshadow: deny \(policy\.matched\) by pol_refund_small_v2 <- differs/,
    );
    expect(r.out).toMatch(/^ {2}~> pol_refund_small_v2 \[shadow\] \(priority 90, deny\) matched: .*shadow/m);
    expect(r.out).toMatch(/^ {2}=> pol_refund_small \(priority 100, allow\) matched/m);
    const same = runCli([...args, '20'], dir);
    expect(same.out).toMatch(
      /^shadow: allow \(policy\.matched\) by pol_refund_small, the same effect and reason with the shadow policies enabled$/m,
    );
    expect(same.out).toMatch(/^ {2} - pol_refund_small_v2 \[shadow\] \(priority 90, deny\) dropped at condition/m);
    const json = JSON.parse(runCli([...args, '40', '--format', 'json'], dir).out);
    expect(json.decision.shadow).toEqual({
      effect: 'deny',
      reason: 'policy.matched',
      policy_id: 'pol_refund_small_v2',
    });
    expect(json.with_shadow).toMatchObject({
      effect: 'deny',
      policy_id: 'pol_refund_small_v2',
      matched: ['pol_refund_small_v2', 'pol_refund_small'],
    });
    expect(json.policies.find((p: { id: string }) => p.id === 'pol_refund_small_v2')).toMatchObject({
      shadow: true,
      outcome: 'matched',
    });
  });

  it('prints no shadow line for a set without shadow policies', () => {
    const dir = tempTree({ 'policies.yaml': 'name: reads\neffect: allow\nactions: [orders.read]\n' });
    const r = runCli(['explain', '.', '--agent', 'a', '--action', 'orders.read'], dir);
    expect(r.out).not.toMatch(/^shadow:/m);
    expect(
      JSON.parse(runCli(['explain', '.', '--agent', 'a', '--action', 'orders.read', '--format', 'json'], dir).out),
    ).not.toHaveProperty('with_shadow');
  });
});

describe('authz test --coverage', () => {
  it('counts a shadow policy as exercised when a case matches it with the shadow policies enabled, and leaves disabled ones out', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES, 'refunds.test.yaml': TESTS });
    const r = runCli(['test', '.', '--coverage'], dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain(
      'coverage: 2/3 policies matched by at least one case, 66.6% (1 disabled policy not counted)',
    );
    expect(r.out).toMatch(/^ {2}not exercised: pol_reads \(policies\.yaml:\d+\)$/m);
    expect(r.out).not.toContain('not exercised: pol_refund_small_v2');
    expect(r.out).not.toContain('not exercised: pol_exports');
  });

  it('fails below --min-coverage, passes at or above it', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES, 'refunds.test.yaml': TESTS });
    const below = runCli(['test', '.', '--min-coverage', '70'], dir);
    expect(below.code).toBe(1);
    expect(below.out).toContain('coverage 66.6% is below the minimum 70%');
    expect(below.out).toMatch(/^2 passed, 0 failed$/m);
    expect(runCli(['test', '.', '--min-coverage', '66'], dir).code).toBe(0);
    const json = JSON.parse(runCli(['test', '.', '--min-coverage', '70', '--format', 'json'], dir).out);
    expect(json).toMatchObject({
      ok: false,
      coverage: {
        policies: 3,
        exercised: 2,
        percent: 66.6,
        minimum: 70,
        not_exercised: ['pol_reads'],
        disabled_not_counted: 1,
      },
    });
    for (const bad of ['101', '-1', 'most', '']) expect(runCli(['test', '.', '--min-coverage', bad], dir).code).toBe(2);
  });

  it('annotates failures, uncovered policies and a coverage below the minimum for GitHub', () => {
    const failing = TESTS.replace('expect: { effect: allow, policy: pol_refund_small }', 'expect: { effect: deny }');
    const dir = tempTree({ 'policies.yaml': POLICIES, 'refunds.test.yaml': failing });
    const r = runCli(['test', '.', '--min-coverage', '90', '--format', 'github'], dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /^::error file=refunds\.test\.yaml,line=2,title=test failed%3A small refund::- effect: deny%0A\+ effect: allow$/m,
    );
    expect(r.out).toMatch(
      /^::warning file=policies\.yaml,line=\d+,title=policy not exercised::no test case matches policy pol_reads$/m,
    );
    expect(r.out).toMatch(/^::error title=coverage below minimum::coverage 66\.6%25 is below the minimum 90%25$/m);
  });
});
