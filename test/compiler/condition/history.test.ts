/**
 * History in conditions and arithmetic (issue 45): compile errors at line and
 * column for every wrong form, probes extracted from nested and `||`
 * conditions, arithmetic types and runtime rules, evaluation with given probe
 * values, the reference history computation, lints, labels, bundles.
 */
import { describe, expect, it } from 'vitest';
import {
  analyzeCondition,
  checkCondition,
  compileCondition,
  conditionProbes,
  parseCondition,
  printCondition,
  type ConditionAst,
  type ConditionIssue,
} from '../../../compiler/condition/index.js';
import { compileSources, createBundle, evaluate, loadBundle, type EvaluationInput } from '../../../compiler/index.js';
import { historyProbesFor, historyReadings, tableHistoryProbes } from '../../../compiler/history/probes-of.js';
import {
  durationSeconds,
  historyProbe,
  probeText,
  windowSeconds,
  type HistoryProbe,
} from '../../../compiler/history/probe.js';
import { historyValueOf, type EarlierDecision } from '../../../compiler/history/reference.js';

/** Every problem of a condition: parse issues, else type issues. */
function problems(text: string): ConditionIssue[] {
  const parsed = parseCondition(text);
  return parsed.ast ? checkCondition(parsed.ast) : parsed.issues;
}

function only(text: string): ConditionIssue {
  const all = problems(text);
  expect(all, text).toHaveLength(1);
  return all[0]!;
}

const ast = (text: string): ConditionAst => {
  const r = analyzeCondition(text);
  expect(r.issues).toEqual([]);
  return r.ast!;
};

const req: EvaluationInput = { agent_id: 'bot', action: 'payments.refund' };

describe('history calls: compile errors at line and column', () => {
  const cases: Array<[string, string, number, number, RegExp]> = [
    // text, code, line, col, message
    ["history.count('a.b')", 'condition.arity', 1, 1, /history\.count takes 2 to 4 arguments .* but got 1/],
    ["history.sum('a.b', '1h', 'agent', [], 'x')", 'condition.arity', 1, 1, /but got 5/],
    ['amount > 1 && history.exists()', 'condition.arity', 1, 15, /but got 0/],
    ["history.total('a.b', '1h') > 1", 'condition.unknown_function', 1, 1, /unknown function 'history.total'/],
    ["historie.count('a.b', '1h') > 1", 'condition.unknown_function', 1, 1, /unknown function 'historie.count'/],
    ["history.count(action, '1h') > 1", 'condition.not_literal', 1, 15, /actions must be a literal/],
    ["history.count(['a.b', action], '1h') > 1", 'condition.not_literal', 1, 23, /actions must be a literal/],
    ["history.count('a.b', context.w) > 1", 'condition.not_literal', 1, 22, /window must be a literal/],
    ["history.count('a.b', '1h', context.s) > 1", 'condition.not_literal', 1, 28, /scope must be a literal/],
    [
      "history.count('a.b', '1h', 'session', [resource]) > 1",
      'condition.not_literal',
      1,
      40,
      /match must be a literal/,
    ],
    [
      "history.count('a.b', '1h', 'session', 'resource') > 1",
      'condition.history_match',
      1,
      39,
      /match must be a list of field names/,
    ],
    ["history.count('A.b', '1h') > 1", 'condition.history_actions', 1, 15, /'A\.b' is not an action pattern/],
    ["history.count(['a.b', 'x'], '1h') > 1", 'condition.history_actions', 1, 23, /'x' is not an action pattern/],
    ["history.count([], '1h') > 1", 'condition.history_actions', 1, 15, /must not be empty/],
    ["history.count(3, '1h') > 1", 'condition.history_actions', 1, 15, /action pattern or a list of them/],
    ["history.count('a.b', '2w') > 1", 'condition.history_window', 1, 22, /"2w" is not a window/],
    ["history.count('a.b', '0s') > 1", 'condition.history_window', 1, 22, /from 1s to 90d/],
    ["history.count('a.b', '91d') > 1", 'condition.history_window', 1, 22, /not a window/],
    ["history.count('a.b', 3600) > 1", 'condition.history_window', 1, 22, /3600 is not a window/],
    [
      "history.count('a.b', '1h', 'team') > 1",
      'condition.history_scope',
      1,
      28,
      /unknown scope "team"; expected session, agent, user, environment/,
    ],
    [
      "history.count('a.b', '1h', 'user', ['amount']) > 1",
      'condition.history_match',
      1,
      37,
      /neither 'resource' nor 'context.<path>'/,
    ],
    [
      "history.count('a.b', '1h', 'user', ['context.__proto__']) > 1",
      'condition.history_match',
      1,
      37,
      /cannot be used as a context field name/,
    ],
    ["history.count('a.b', '1h', 'user', [1]) > 1", 'condition.history_match', 1, 37, /list of field names as strings/],
    ["amount > 1 &&\n  history.count('a.b',\n    '1x') > 1", 'condition.history_window', 3, 5, /"1x" is not a window/],
    ["history.count('a.b', '1h') > 'x'", 'condition.type', 1, 28, /needs two numbers or two strings/],
    ["history.exists('a.b', '1h') > 1", 'condition.type', 1, 1, /is a boolean/],
    ["history.count('a.b', '1h')", 'condition.type', 1, 1, /must be true or false/],
    ['history > 1', 'condition.unknown_name', 1, 1, /history is read through its functions/],
    ['session.id == 1', 'condition.unknown_name', 1, 9, /session has only labels/],
    ['session == 1', 'condition.unknown_name', 1, 1, /session has only labels/],
  ];
  for (const [text, code, line, col, message] of cases) {
    it(`${JSON.stringify(text)}: ${code} at ${line}:${col}`, () => {
      const issue = only(text);
      expect(issue.code).toBe(code);
      expect([issue.line, issue.col]).toEqual([line, col]);
      expect(issue.message).toMatch(message);
    });
  }

  it('reports every bad argument of one call', () => {
    expect(problems("history.count('A', '2w', 'team', ['x'])").map((i) => [i.code, i.col])).toEqual([
      ['condition.history_actions', 15],
      ['condition.history_window', 20],
      ['condition.history_scope', 26],
      ['condition.history_match', 35],
      ['condition.type', 1],
    ]);
  });

  it('rejects a malformed history node read back from a file (checker)', () => {
    const node = {
      kind: 'history',
      fn: 'count',
      args: [{ kind: 'literal', value: 'a.b', pos: { offset: 0, line: 1, col: 1 } }],
      pos: { offset: 0, line: 1, col: 1 },
    };
    const compare = {
      kind: 'compare',
      op: '<',
      left: node,
      right: { kind: 'literal', value: 1, pos: node.pos },
      pos: node.pos,
      opPos: node.pos,
    } as unknown as ConditionAst;
    expect(checkCondition(compare).map((i) => i.code)).toEqual(['condition.arity']);
  });
});

describe('arithmetic', () => {
  it('parses with the usual precedence and left associativity, and prints back', () => {
    const cases: Array<[string, string]> = [
      ['1 + 2 * 3 == 7', '1 + 2 * 3 == 7'],
      ['(1 + 2) * 3 == 9', '(1 + 2) * 3 == 9'],
      ['10 - 4 - 3 == 3', '10 - 4 - 3 == 3'],
      ['10 - (4 - 3) == 9', '10 - (4 - 3) == 9'],
      ['8 / 4 / 2 == 1', '8 / 4 / 2 == 1'],
      ['amount-3 > -2', 'amount - 3 > -2'],
      ['amount - -3 > 0', 'amount - -3 > 0'],
      ['context.in -1 > 0', 'context.in - 1 > 0'],
    ];
    for (const [text, printed] of cases) {
      const a = ast(text);
      expect(printCondition(a)).toBe(printed);
      expect(compileCondition(a)({ ...req, amount: 5, context: { in: 5 } }), text).toBe(true);
    }
  });

  it('is type-checked like comparisons', () => {
    expect(only("amount + 'x' > 1")).toMatchObject({
      code: 'condition.type',
      col: 10,
      message: expect.stringMatching(/'\+' needs two numbers, but 'x' is a string/),
    });
    expect(only('resource * 2 > 1')).toMatchObject({ code: 'condition.type', col: 1 });
    expect(only('(amount > 1) - 1 > 0')).toMatchObject({ code: 'condition.type', col: 2 });
    expect(only('session.labels + 1 > 0')).toMatchObject({ code: 'condition.type', col: 1 });
    expect(only("amount + 1 == 'a'")).toMatchObject({ code: 'condition.type' });
    // A context value may be a number: accepted, checked at run time.
    expect(problems('context.n * 2 > amount')).toEqual([]);
  });

  it('gives a missing value, so a false comparison, for a missing operand or a division by zero', () => {
    const holds = (text: string, r: EvaluationInput) => compileCondition(ast(text))(r);
    expect(holds('amount + 1 > 0', { ...req, amount: 1 })).toBe(true);
    expect(holds('amount + 1 > 0', req)).toBe(false);
    expect(holds('!(amount + 1 > 0)', req)).toBe(true);
    expect(holds('context.n * 2 > 0', { ...req, context: { n: '3' } })).toBe(false);
    expect(holds('10 / amount > 0', { ...req, amount: 0 })).toBe(false);
    expect(holds('10 / amount < 100', { ...req, amount: 0 })).toBe(false);
    expect(holds('10 / amount >= 5', { ...req, amount: 2 })).toBe(true);
    expect(holds('amount * 1e308 > 0', { ...req, amount: 10 })).toBe(false);
    expect(holds('amount + 1 != 5', req)).toBe(false);
  });

  it("keeps '-' before a number's digits a sign where an operand is expected", () => {
    expect(only('amount > - 5')).toMatchObject({
      code: 'condition.syntax',
      col: 10,
      message: expect.stringMatching(/minus sign/),
    });
    expect(only('amount > -x')).toMatchObject({ code: 'condition.syntax' });
    expect(problems('[1, -2] == context.l')).toEqual([]);
  });
});

describe('probes', () => {
  it('are extracted from nested, negated, arithmetic and || conditions, unique by key', () => {
    const a = ast(
      "amount < 5 || (history.count(['payments.refund', 'payments.*'], '1h') < 3 && !history.exists('payments.*', '60m')) || history.sum('shop.buy', '1d', 'user') + amount <= 100 || startsWith(resource, 'x') && history.denied('*', '10m', 'agent') >= 3 || history.count('claims.approve', '7d', 'environment', ['resource', 'context.claim.id'])> 0",
    );
    expect(conditionProbes(a).map((p) => p.key)).toEqual([
      'count|payments.*,payments.refund|3600|session|',
      'count|payments.*|3600|session|',
      'sum|shop.buy|86400|user|',
      'denied|*|600|agent|',
      'count|claims.approve|604800|environment|context.claim.id,resource',
    ]);
    const [first] = conditionProbes(a);
    expect(first).toEqual({
      key: 'count|payments.*,payments.refund|3600|session|',
      fn: 'count',
      measure: 'count',
      actions: ['payments.*', 'payments.refund'],
      window: '1h',
      windowSeconds: 3600,
      scope: 'session',
      match: [],
    });
  });

  it('have a canonical text and windows in seconds', () => {
    expect(probeText(historyProbe('exists', ['b.c', 'a.b'], '7d', 'session', ['resource']))).toBe(
      "history.exists(['a.b', 'b.c'], '7d', 'session', ['resource'])",
    );
    expect(probeText(historyProbe('count', ['a.b'], '90d', 'session', []))).toBe("history.count('a.b', '90d')");
    expect([
      windowSeconds('1s'),
      windowSeconds('90d'),
      windowSeconds('2160h'),
      windowSeconds('2161h'),
      windowSeconds('0s'),
      windowSeconds('01h'),
    ]).toEqual([1, 7_776_000, 7_776_000, undefined, undefined, undefined]);
    expect(durationSeconds('0s')).toBe(0);
  });

  const text = [
    'policies:',
    "  - { name: capped, effect: allow, agents: ['bot-*'], actions: [payments.refund], condition: \"history.count('payments.refund', '1h') < 3\" }",
    "  - { name: capped-again, effect: deny, actions: ['payments.*'], condition: \"history.count('payments.refund', '60m') >= 3 || history.denied('*', '10m', 'agent') > 2\" }",
    "  - { name: paused, state: disabled, effect: allow, actions: [payments.refund], condition: \"history.sum('payments.refund', '1d') < 9\" }",
    "  - { name: trial, state: shadow, effect: review, actions: [payments.refund], condition: \"history.exists('claims.approve', '7d', 'environment', ['resource'])\" }",
    '  - { name: plain, effect: allow, actions: [orders.read] }',
  ].join('\n');
  const { table, diagnostics } = compileSources([{ file: 'p.yaml', text }]);

  it('of a request are those of its candidate policies, enforced and shadow (not disabled ones, not other agents or actions)', () => {
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const keys = (r: EvaluationInput) => historyProbesFor(table!, r).map((p) => p.key);
    expect(keys({ agent_id: 'bot-1', action: 'payments.refund' })).toEqual([
      'count|payments.refund|3600|session|',
      'denied|*|600|agent|',
      'count|claims.approve|604800|environment|resource',
    ]);
    expect(keys({ agent_id: 'other', action: 'payments.refund' })).toEqual([
      'count|payments.refund|3600|session|',
      'denied|*|600|agent|',
      'count|claims.approve|604800|environment|resource',
    ]);
    expect(keys({ agent_id: 'other', action: 'payments.capture' })).toEqual([
      'count|payments.refund|3600|session|',
      'denied|*|600|agent|',
    ]);
    expect(keys({ agent_id: 'bot-1', action: 'orders.read' })).toEqual([]);
    expect(
      tableHistoryProbes(table!)
        .map((p) => p.key)
        .sort(),
    ).toEqual(
      [
        'count|claims.approve|604800|environment|resource',
        'count|payments.refund|3600|session|',
        'denied|*|600|agent|',
        'sum|payments.refund|86400|session|',
      ].sort(),
    );
    const plain = compileSources([{ file: 'q.yaml', text: 'name: r\neffect: allow\nactions: [orders.read]\n' }]).table!;
    expect(tableHistoryProbes(plain)).toEqual([]);
    expect(historyProbesFor(plain, { agent_id: 'a', action: 'orders.read' })).toEqual([]);
  });

  it('feed evaluation through the request provider; unknown values make comparisons false', () => {
    const at = (values: Record<string, number | null>) => (probe: HistoryProbe) => values[probe.key] ?? 0;
    const r = { agent_id: 'bot-1', action: 'payments.refund' };
    expect(evaluate(table!, { ...r, history: at({}) }).policy_id).toBe('pol_capped');
    expect(evaluate(table!, { ...r, history: at({ 'count|payments.refund|3600|session|': 2 }) }).policy_id).toBe(
      'pol_capped',
    );
    expect(evaluate(table!, { ...r, history: at({ 'count|payments.refund|3600|session|': 3 }) }).policy_id).toBe(
      'pol_capped_again',
    );
    expect(evaluate(table!, { ...r, history: at({ 'denied|*|600|agent|': 3 }) }).effect).toBe('deny');
    // No provider, or null: unknown, every comparison that reads it false.
    expect(evaluate(table!, r).reason).toBe('policy.not_found');
    expect(evaluate(table!, { ...r, history: () => null }).reason).toBe('policy.not_found');
    expect(evaluate(table!, { ...r, history: () => Number.NaN }).reason).toBe('policy.not_found');
    // The shadow policy reads its probe too.
    const withApproval = evaluate(table!, {
      ...r,
      history: at({ 'count|claims.approve|604800|environment|resource': 1 }),
    });
    expect(withApproval.shadow).toEqual({ effect: 'review', reason: 'policy.matched', policy_id: 'pol_trial' });
    expect(
      historyReadings(table!, { ...r, history: at({ 'denied|*|600|agent|': 2 }) }).map((x) => [x.fn, x.value]),
    ).toEqual([
      ['count', 0],
      ['denied', 2],
      ['exists', 0],
    ]);
  });

  it('history.exists is a boolean: true above 0, false when unknown', () => {
    const exists = compileCondition(ast("history.exists('a.b', '1h')"));
    expect([
      exists({ ...req, history: () => 1 }),
      exists({ ...req, history: () => 0 }),
      exists({ ...req, history: () => null }),
      exists(req),
    ]).toEqual([true, false, false, false]);
    expect(compileCondition(ast("!history.exists('a.b', '1h')"))({ ...req, history: () => 2 })).toBe(false);
  });
});

describe('session.labels', () => {
  it('is a list conditions read with contains and in, in || too', () => {
    const f = compileCondition(
      ast("contains(session.labels, 'private') && contains(session.labels, 'untrusted') || 'secret' in session.labels"),
    );
    expect(f({ ...req, session_labels: ['private', 'untrusted'] })).toBe(true);
    expect(f({ ...req, session_labels: ['private'] })).toBe(false);
    expect(f({ ...req, session_labels: ['secret'] })).toBe(true);
    expect(f({ ...req, session_labels: null })).toBe(false);
    expect(f(req)).toBe(false);
    expect(compileCondition(ast('session.labels == []'))(req)).toBe(true);
    expect(only("session.labels == 'private'").code).toBe('condition.type');
  });
});

describe('the reference history computation', () => {
  const now = 1_000_000_000;
  const base: EarlierDecision = {
    action: 'shop.buy',
    agent_id: 'a1',
    session_id: 's1',
    on_behalf_of: 'u1',
    resource: 'cart:1',
    amount: 10,
    context: { claim: { id: 'c1' } },
    effect: 'allow',
    at_ms: now - 60_000,
  };
  const r: EvaluationInput = {
    agent_id: 'a1',
    action: 'shop.buy',
    session_id: 's1',
    on_behalf_of: 'u1',
    resource: 'cart:1',
    context: { claim: { id: 'c1' } },
  };
  const value = (probe: HistoryProbe, earlier: EarlierDecision[], request = r) =>
    historyValueOf(probe, request, earlier, now);

  it('counts within the window (its start included), per scope, per outcome', () => {
    const earlier: EarlierDecision[] = [
      base,
      { ...base, at_ms: now - 3_600_000 },
      { ...base, at_ms: now - 3_600_001 },
      { ...base, at_ms: now + 1 },
      { ...base, session_id: 's2' },
      { ...base, agent_id: 'a2', session_id: 's2' },
      { ...base, on_behalf_of: 'u2', agent_id: 'a3', session_id: 's3' },
      { ...base, effect: 'deny' },
      { ...base, action: 'shop.return' },
    ];
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'session', []), earlier)).toBe(2);
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'agent', []), earlier)).toBe(3);
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'user', []), earlier)).toBe(4);
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'environment', []), earlier)).toBe(5);
    expect(value(historyProbe('count', ['shop.*'], '1h', 'environment', []), earlier)).toBe(6);
    expect(value(historyProbe('denied', ['*'], '1h', 'session', []), earlier)).toBe(1);
    expect(
      value(historyProbe('count', ['shop.buy'], '1h', 'session', []), earlier, { ...r, session_id: null }),
    ).toBeNull();
    expect(
      value(historyProbe('count', ['shop.buy'], '1h', 'user', []), earlier, { ...r, on_behalf_of: undefined }),
    ).toBeNull();
  });

  it('sums confirmed amounts when set, else amounts, else nothing', () => {
    const earlier: EarlierDecision[] = [
      base,
      { ...base, confirmed_amount: 4 },
      { ...base, amount: null },
      { ...base, effect: 'deny', amount: 100 },
    ];
    expect(value(historyProbe('sum', ['shop.buy'], '1d', 'session', []), earlier)).toBe(14);
  });

  it('matches resource and context fields; a field the request lacks matches nothing', () => {
    const earlier: EarlierDecision[] = [
      base,
      { ...base, resource: 'cart:2' },
      { ...base, context: { claim: { id: 'c2' } } },
      { ...base, context: null },
    ];
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'session', ['resource']), earlier)).toBe(3);
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'session', ['context.claim.id']), earlier)).toBe(2);
    expect(value(historyProbe('count', ['shop.buy'], '1h', 'session', ['resource', 'context.claim.id']), earlier)).toBe(
      1,
    );
    expect(
      value(historyProbe('count', ['shop.buy'], '1h', 'session', ['resource']), earlier, { ...r, resource: null }),
    ).toBe(0);
    expect(
      value(historyProbe('count', ['shop.buy'], '1h', 'session', ['context.claim.id']), earlier, { ...r, context: {} }),
    ).toBe(0);
  });
});

describe('lints', () => {
  const lints = (condition: string, options: { retentionDays?: number | null } = {}, extra = '') =>
    compileSources(
      [{ file: 'p.yaml', text: `name: p\neffect: allow\nactions: [a.b]\ncondition: "${condition}"\n${extra}` }],
      options,
    )
      .diagnostics.filter((d) => d.code.startsWith('lint.'))
      .map((d) => d.code);

  it('a comparison no history can satisfy', () => {
    expect(lints("history.count('a.b', '1h') < 0")).toEqual(['lint.history_unsatisfiable']);
    expect(lints("amount > 1 || 0 > history.denied('a.b', '1h')")).toEqual(['lint.history_unsatisfiable']);
    expect(lints("history.sum('a.b', '1h') <= -1")).toEqual(['lint.history_unsatisfiable']);
    expect(lints("history.count('a.b', '1h') == 1.5")).toEqual(['lint.history_unsatisfiable']);
    expect(lints("history.sum('a.b', '1h') == 1.5")).toEqual([]);
    expect(lints("history.count('a.b', '1h') < 1")).toEqual([]);
    expect(lints("history.count('a.b', '1h') <= 0")).toEqual([]);
  });

  it('an environment probe on every action', () => {
    expect(lints("history.count('*', '1h', 'environment') < 5")).toEqual(['lint.history_environment_wildcard']);
    expect(lints("history.count(['a.b', '*'], '1h', 'environment') < 5")).toEqual([
      'lint.history_environment_wildcard',
    ]);
    expect(lints("history.count('*', '1h', 'agent') < 5")).toEqual([]);
    expect(lints("history.count('a.*', '1h', 'environment') < 5")).toEqual([]);
  });

  it('a window beyond the retention, only where the retention is known', () => {
    const c = "history.count('a.b', '60d') < 5 && history.count('a.b', '1440h') < 9";
    expect(lints(c)).toEqual([]);
    expect(lints(c, { retentionDays: 90 })).toEqual([]);
    expect(lints(c, { retentionDays: null })).toEqual([]);
    expect(lints(c, { retentionDays: 30 })).toEqual(['lint.history_beyond_retention']);
    const [d] = compileSources(
      [{ file: 'p.yaml', text: `name: p\neffect: allow\nactions: [a.b]\ncondition: "${c}"\n` }],
      { retentionDays: 30 },
    ).diagnostics;
    expect(d!.message).toMatch(/reads 60d of history, but the decision log keeps 30 days/);
  });

  it('labels on a deny policy', () => {
    const codes = (effect: string) =>
      compileSources([
        { file: 'p.yaml', text: `name: p\neffect: ${effect}\nactions: [a.b]\nlabels: [private]\n` },
      ]).diagnostics.map((d) => d.code);
    expect(codes('deny')).toEqual(['lint.labels_ignored']);
    expect(codes('allow')).toEqual([]);
    expect(codes('review')).toEqual([]);
  });
});

describe('the labels field', () => {
  const read = (labels: string) =>
    compileSources([{ file: 'p.yaml', text: `name: p\neffect: allow\nactions: [a.b]\nlabels: ${labels}\n` }]);

  it('is normalised to a sorted set', () => {
    expect(read('[untrusted, private]').policies[0]!.labels).toEqual(['private', 'untrusted']);
  });

  it('follows the label grammar, at its line and column', () => {
    const bad = read("[private, 'Bad', '-x', 'a_b.c-d']").diagnostics.filter((d) => d.severity === 'error');
    expect(bad.map((d) => [d.code, d.line, d.col])).toEqual([
      ['policy.invalid_field', 4, 19],
      ['policy.invalid_field', 4, 26],
    ]);
    expect(bad[0]!.message).toMatch(/labels\[1\] "Bad" must be a label/);
    expect(read(`[${'a'.repeat(65)}]`).diagnostics[0]!.code).toBe('policy.invalid_field');
    expect(read(`[${'a'.repeat(64)}]`).diagnostics).toEqual([]);
    expect(read('[a, a]').diagnostics[0]!.code).toBe('policy.invalid_field');
    expect(read('[]').diagnostics[0]!.code).toBe('policy.invalid_field');
  });
});

describe('bundles', () => {
  const text = [
    'policies:',
    "  - { name: capped, effect: allow, actions: [payments.refund], labels: [payments], condition: \"history.count('payments.refund', '1h') < 3\" }",
    '  - { name: plain, effect: allow, actions: [orders.read] }',
  ].join('\n');
  const { table } = compileSources([{ file: 'p.yaml', text }]);

  it('carry the probes by policy id, and loading checks them', () => {
    const bundle = JSON.parse(JSON.stringify(createBundle(table!)));
    expect(Object.keys(bundle.probes)).toEqual(['pol_capped']);
    expect(bundle.probes.pol_capped[0].key).toBe('count|payments.refund|3600|session|');
    const loaded = loadBundle(bundle);
    expect(loaded.ok).toBe(true);
    if (!loaded.ok) return;
    expect(tableHistoryProbes(loaded.table).map((p) => p.key)).toEqual(['count|payments.refund|3600|session|']);
    expect(loaded.table.byId.get('pol_capped')!.policy.labels).toEqual(['payments']);

    const altered = structuredClone(bundle);
    altered.probes.pol_capped[0].windowSeconds = 60;
    altered.probes.pol_capped[0].key = 'count|payments.refund|60|session|';
    const refused = loadBundle(altered);
    expect(refused.ok || refused.problems[0]!.message).toMatch(
      /the history probes of policy pol_capped do not match its condition/,
    );
    const extra = structuredClone(bundle);
    extra.probes.pol_plain = bundle.probes.pol_capped;
    expect(loadBundle(extra).ok).toBe(false);
  });

  it('without probes (written before history) still load, probes computed from the conditions', () => {
    const bundle = JSON.parse(JSON.stringify(createBundle(table!)));
    delete bundle.probes;
    const loaded = loadBundle(bundle);
    expect(loaded.ok && tableHistoryProbes(loaded.table).length).toBe(1);
    const plain = createBundle(
      compileSources([{ file: 'q.yaml', text: 'name: r\neffect: allow\nactions: [orders.read]\n' }]).table!,
    );
    expect('probes' in plain).toBe(false);
  });
});
