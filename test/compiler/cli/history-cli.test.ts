/**
 * `authz test` and `authz explain` with history and labels: a case's
 * `history:` and `session_labels:`, the history values of a failing case,
 * `explain --session --on-behalf-of --history FILE --labels a,b`, and the
 * policy-test schema for the new fields.
 */
import { describe, expect, it } from 'vitest';
import { runCli, tempTree } from './run-cli.js';

const POLICIES = `policies:
  - name: refunds-per-session
    effect: allow
    actions: [billing.refund]
    condition: history.count('billing.refund', '1h') < 2
  - name: shopping-per-user
    effect: allow
    actions: [shop.buy]
    condition: history.sum('shop.buy', '1d', 'user') + amount <= 100
  - name: mail
    effect: allow
    actions: [mail.send]
    condition: "!contains(session.labels, 'private')"
`;

const TESTS = `cases:
  - name: second refund allowed
    request: { agent_id: a1, action: billing.refund, session_id: s1 }
    history:
      - { action: billing.refund, ago: 30m }
      - { action: billing.refund, ago: 2h }
      - { action: billing.refund, ago: 5m, session_id: s2 }
      - { action: billing.refund, ago: 5m, effect: deny }
    expect: { effect: allow, policy: pol_refunds_per_session }
  - name: third refund denied
    request: { agent_id: a1, action: billing.refund, session_id: s1 }
    history:
      - { action: billing.refund, ago: 30m }
      - { action: billing.refund, ago: 10m, agent_id: a2 }
    expect: { effect: deny, reason: policy.not_found }
  - name: a user's sum with this amount
    request: { agent_id: a1, action: shop.buy, amount: 40, on_behalf_of: u1 }
    history:
      - { action: shop.buy, ago: 1h, amount: 60, agent_id: a2 }
    expect: { effect: allow }
  - name: private sessions send no mail
    request: { agent_id: a1, action: mail.send, session_id: s1 }
    session_labels: [private]
    expect: { effect: deny }
`;

describe('authz test with history and labels', () => {
  it('decides each case with its earlier decisions and labels', () => {
    const dir = tempTree({ 'p.yaml': POLICIES, 'p.test.yaml': TESTS });
    const { code, out } = runCli(['test', dir]);
    expect(out).toContain('4 passed, 0 failed');
    expect(code).toBe(0);
  });

  it('reports the history values of a failing case', () => {
    const failing = `cases:
  - name: wrong on purpose
    request: { agent_id: a1, action: shop.buy, amount: 40, on_behalf_of: u1 }
    history:
      - { action: shop.buy, ago: 1h, amount: 70, agent_id: a2 }
    expect: { effect: allow }
`;
    const dir = tempTree({ 'p.yaml': POLICIES, 'f.test.yaml': failing });
    const { code, out } = runCli(['test', dir]);
    expect(code).toBe(1);
    expect(out).toContain('- effect: allow');
    expect(out).toContain('+ effect: deny');
    expect(out).toContain("history: history.sum('shop.buy', '1d', 'user') = 70");
    const json = JSON.parse(runCli(['test', dir, '--format', 'json']).out);
    expect(json.suites[0].cases[0].history).toEqual([
      { fn: 'sum', actions: ['shop.buy'], window: '1d', scope: 'user', match: [], value: 70 },
    ]);
  });

  it('shows an unknown value when the scope needs a field the request lacks', () => {
    const failing = `cases:
  - name: no session
    request: { agent_id: a1, action: billing.refund }
    expect: { effect: allow }
`;
    const { out } = runCli(['test', tempTree({ 'p.yaml': POLICIES, 'f.test.yaml': failing })]);
    expect(out).toContain("history: history.count('billing.refund', '1h') unknown");
  });

  it('refuses bad history entries and labels with their positions', () => {
    const bad = `cases:
  - name: bad
    request: { agent_id: a1, action: billing.refund, session_id: s1 }
    history:
      - { action: billing.refund, ago: 10 minutes }
      - { action: 'billing.*', ago: 1h }
      - { ago: 1h }
      - { action: billing.refund, ago: 1h, effect: review, when: now }
    session_labels: [Private]
    expect: { effect: allow }
`;
    const { code, out } = runCli(['test', tempTree({ 'p.yaml': POLICIES, 'b.test.yaml': bad })]);
    expect(code).toBe(1);
    expect(out).toMatch(/b\.test\.yaml:5:\d+: cases\[0\]\.history\[0\]\.ago must be a duration before the request/);
    expect(out).toMatch(/b\.test\.yaml:6:\d+: cases\[0\]\.history\[1\]\.action must be namespace\.verb/);
    expect(out).toMatch(/b\.test\.yaml:7:\d+: cases\[0\]\.history\[2\]: missing required field "action"/);
    expect(out).toMatch(/b\.test\.yaml:8:\d+: unknown field "when"/);
    expect(out).toMatch(/cases\[0\]\.history\[3\]\.effect must be equal to one of the allowed values/);
    expect(out).toMatch(/b\.test\.yaml:9:\d+: cases\[0\]\.session_labels\[0\] must be a label/);
  });
});

describe('authz explain with history and labels', () => {
  const HISTORY = `- { action: shop.buy, ago: 3h, amount: 50, agent_id: a2 }
- { action: shop.buy, ago: 2d, amount: 50 }
- { action: shop.buy, ago: 1h, amount: 25, on_behalf_of: u2 }
`;

  it('prints the history values the candidate policies read, and uses them', () => {
    const dir = tempTree({ 'policies/p.yaml': POLICIES, 'history.yaml': HISTORY });
    const allowed = runCli(
      [
        'explain',
        'policies',
        '--agent',
        'a1',
        '--action',
        'shop.buy',
        '--amount',
        '50',
        '--on-behalf-of',
        'u1',
        '--history',
        'history.yaml',
      ],
      dir,
    );
    expect(allowed.code).toBe(0);
    expect(allowed.out).toContain('decision: allow (policy.matched) by pol_shopping_per_user');
    expect(allowed.out).toContain("history: history.sum('shop.buy', '1d', 'user') = 50");
    const denied = runCli(
      [
        'explain',
        'policies',
        '--agent',
        'a1',
        '--action',
        'shop.buy',
        '--amount',
        '51',
        '--on-behalf-of',
        'u1',
        '--history',
        'history.yaml',
      ],
      dir,
    );
    expect(denied.out).toContain('decision: deny (policy.not_found)');
    expect(denied.out).toContain("(amount = 51, history.sum('shop.buy', '1d', 'user') = 50)");
    const json = JSON.parse(
      runCli(
        [
          'explain',
          'policies',
          '--agent',
          'a1',
          '--action',
          'shop.buy',
          '--amount',
          '5',
          '--on-behalf-of',
          'u2',
          '--history',
          'history.yaml',
          '--format',
          'json',
        ],
        dir,
      ).out,
    );
    // Entries without on_behalf_of are the request's user's (u2 here): 50 + 25; the one of 2 days ago is out of the window.
    expect(json.history).toEqual([
      { fn: 'sum', actions: ['shop.buy'], window: '1d', scope: 'user', match: [], value: 75 },
    ]);
    expect(json.request).toEqual({ agent_id: 'a1', action: 'shop.buy', amount: 5, on_behalf_of: 'u2' });
  });

  it('takes the session and its labels', () => {
    const dir = tempTree({ 'policies/p.yaml': POLICIES });
    const run = (...extra: string[]) =>
      runCli(['explain', 'policies', '--agent', 'a1', '--action', 'mail.send', '--session', 's1', ...extra], dir);
    expect(run().out).toContain('decision: allow');
    const withLabels = run('--labels', 'untrusted,private');
    expect(withLabels.out).toContain('decision: deny (policy.not_found)');
    expect(withLabels.out).toContain('session.labels = ["untrusted","private"]');
    const json = JSON.parse(run('--labels', 'private', '--format', 'json').out);
    expect(json.request).toEqual({
      agent_id: 'a1',
      action: 'mail.send',
      session_id: 's1',
      session_labels: ['private'],
    });
    const refunds = runCli(
      ['explain', 'policies', '--agent', 'a1', '--action', 'billing.refund', '--session', 's1'],
      dir,
    );
    expect(refunds.out).toContain("history: history.count('billing.refund', '1h') = 0");
  });

  it('refuses bad options and a bad history file', () => {
    const dir = tempTree({
      'policies/p.yaml': POLICIES,
      'bad.yaml': '- { action: shop.buy }\n',
      'map.yaml': 'action: shop.buy\n',
    });
    const args = ['explain', 'policies', '--agent', 'a1', '--action', 'shop.buy'];
    expect(runCli([...args, '--labels', 'ok,Not Ok'], dir)).toMatchObject({
      code: 2,
      err: expect.stringContaining('"Not Ok" is not a label'),
    });
    expect(runCli([...args, '--session', ''], dir)).toMatchObject({
      code: 2,
      err: expect.stringContaining('--session must be 1 to 256 characters'),
    });
    expect(runCli([...args, '--history', 'missing.yaml'], dir)).toMatchObject({
      code: 2,
      err: expect.stringContaining('--history missing.yaml'),
    });
    expect(runCli([...args, '--history', 'bad.yaml'], dir)).toMatchObject({
      code: 1,
      err: expect.stringMatching(/bad\.yaml:1:3: history\[0\]: missing required field "ago"/),
    });
    expect(runCli([...args, '--history', 'map.yaml'], dir)).toMatchObject({
      code: 1,
      err: expect.stringMatching(/map\.yaml:1:1: history must be array/),
    });
  });
});
