/**
 * The policy language's budget `scope: agent | session | user` and `unit:
 * tokens` (docs/budgets-and-limits.md#spend-controls-for-agent-runs): read, bounds, kept through
 * the canonical form and a bundle; the lints `lint.budget_units` (two held
 * units on one request) and `lint.budget_ignored` (a budget on a deny policy).
 */
import { describe, expect, it } from 'vitest';
import {
  budgetScope,
  canonicalPolicy,
  compileItems,
  compileSources,
  createBundle,
  loadBundle,
  readPolicyValue,
} from '../../compiler/index.js';

const base = { name: 'runs', effect: 'allow', actions: ['llm.call'] };

describe('budget scope and tokens in policies', () => {
  it('reads scope and tokens, keeps them in the canonical form and through a bundle', () => {
    const read = readPolicyValue({
      ...base,
      id: 'pol_runs',
      budget: { unit: 'tokens', limit: 2_000_000, period: 'daily', scope: 'session' },
    });
    expect(read.diagnostics).toEqual([]);
    const policy = read.items[0]!.policy;
    expect(policy.budget).toEqual({ unit: 'tokens', limit: 2_000_000, period: 'daily', scope: 'session' });
    expect(canonicalPolicy(policy).budget).toEqual(policy.budget);
    const { table } = compileItems(read.items);
    const loaded = loadBundle(JSON.parse(JSON.stringify(createBundle(table!))));
    expect(loaded.ok).toBe(true);
    if (loaded.ok) expect(loaded.table.byId.get('pol_runs')!.policy.budget!.scope).toBe('session');
  });

  it('takes agent when the scope is absent', () => {
    const read = readPolicyValue({ ...base, budget: { unit: 'USD', limit: 5, period: 'daily' } });
    expect(read.items[0]!.policy.budget!.scope).toBeUndefined();
    expect(budgetScope(read.items[0]!.policy.budget!)).toBe('agent');
  });

  it('refuses an unknown scope and an unknown unit, at their paths', () => {
    const problems = (budget: unknown) => readPolicyValue({ ...base, budget }).diagnostics.map((d) => [d.path, d.code]);
    expect(problems({ unit: 'USD', limit: 5, period: 'daily', scope: 'run' })).toEqual([
      ['/budget/scope', 'policy.invalid_field'],
    ]);
    expect(problems({ unit: 'token', limit: 5, period: 'daily' })).toEqual([['/budget/unit', 'policy.invalid_field']]);
    expect(problems({ unit: 'tokens', limit: 5, period: 'daily', scope: 'user' })).toEqual([]);
    expect(problems({ unit: 'calls', limit: 5, period: 'daily', scope: 'agent' })).toEqual([]);
  });

  it('lints two policies that can match one request with different held units, and a budget on a deny policy', () => {
    const text = [
      'policies:',
      '  - name: spend',
      '    effect: allow',
      '    actions: [llm.*]',
      '    budget: { unit: USD, limit: 5, period: daily, scope: session }',
      '  - name: tokens',
      '    effect: allow',
      '    actions: [llm.call]',
      '    budget: { unit: tokens, limit: 100000, period: daily, scope: session }',
      '  - name: calls',
      '    effect: allow',
      '    actions: [llm.call]',
      '    budget: { unit: calls, limit: 100, period: daily }',
      '  - name: other',
      '    effect: allow',
      '    actions: [mail.send]',
      '    budget: { unit: EUR, limit: 5, period: daily }',
      '  - name: blocked',
      '    effect: deny',
      '    actions: [shell.exec]',
      '    budget: { unit: USD, limit: 5, period: daily }',
    ].join('\n');
    const result = compileSources([{ file: 'p.yaml', text }]);
    const lints = result.diagnostics.map((d) => [d.severity, d.code, d.line]).sort();
    expect(lints).toEqual([
      ['warning', 'lint.budget_ignored', 18],
      ['warning', 'lint.budget_units', 6],
    ]);
    const units = result.diagnostics.find((d) => d.code === 'lint.budget_units')!;
    expect(units.message).toContain('pol_spend');
    expect(units.message).toContain('amounts');
    expect(compileSources([{ file: 'p.yaml', text }], { strict: true }).table).toBeUndefined();
  });
});
