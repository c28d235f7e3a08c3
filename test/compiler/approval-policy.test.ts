/**
 * The policy language's `approval: { required, timeout_seconds }` (review
 * policies: the decision waits for a human's approval): read and normalised,
 * bounds (timeout 1..86400 seconds, `required` required, no unknown fields),
 * kept in the canonical form and through a bundle, and the lint
 * `lint.approval_ignored` for an approval on a policy whose effect is not review.
 */
import { describe, expect, it } from 'vitest';
import {
  canonicalPolicy,
  compileItems,
  compileSources,
  createBundle,
  evaluate,
  loadBundle,
  readPolicyValue,
} from '../../compiler/index.js';

const base = { name: 'refunds', effect: 'review', actions: ['payments.refund'] };

describe('approval in policies', () => {
  it('is read and normalised, and kept in the canonical form', () => {
    const { items, diagnostics } = readPolicyValue({ ...base, approval: { required: true, timeout_seconds: 900 } });
    expect(diagnostics).toEqual([]);
    expect(items[0]!.policy.approval).toEqual({ required: true, timeout_seconds: 900 });
    expect(Object.keys(canonicalPolicy(items[0]!.policy)).at(-1)).toBe('approval');
    expect(readPolicyValue({ ...base, approval: { required: false } }).items[0]!.policy.approval).toEqual({
      required: false,
    });
  });

  it('refuses bad approvals, each at its path', () => {
    const problems = (approval: unknown) =>
      readPolicyValue({ ...base, approval }).diagnostics.map((d) => [d.path, d.code]);
    expect(problems({ required: true, timeout_seconds: 0 })).toEqual([
      ['/approval/timeout_seconds', 'policy.invalid_field'],
    ]);
    expect(problems({ required: true, timeout_seconds: 86_401 })).toEqual([
      ['/approval/timeout_seconds', 'policy.invalid_field'],
    ]);
    expect(problems({ required: true, timeout_seconds: 1.5 })).toEqual([
      ['/approval/timeout_seconds', 'policy.invalid_field'],
    ]);
    expect(problems({ timeout_seconds: 60 })).toEqual([['/approval', 'policy.invalid_field']]);
    expect(problems({ required: 'yes' })).toEqual([['/approval/required', 'policy.invalid_field']]);
    expect(problems(true)).toEqual([['/approval', 'policy.invalid_field']]);
    const unknown = readPolicyValue({ ...base, approval: { required: true, timeout: 60 } }).diagnostics;
    expect(unknown.map((d) => d.path)).toEqual(['/approval/timeout']);
    expect(unknown[0]!.message).toContain('timeout_seconds');
    expect(readPolicyValue({ ...base, aproval: { required: true } }).diagnostics[0]!.message).toContain(
      'did you mean "approval"',
    );
    expect(problems({ required: true, timeout_seconds: 1 })).toEqual([]);
    expect(problems({ required: true, timeout_seconds: 86_400 })).toEqual([]);
  });

  it('lints an approval on a policy whose effect is not review, at its line', () => {
    const text = [
      'policies:',
      '  - name: refunds',
      '    effect: review',
      '    actions: [payments.refund]',
      '    approval: { required: true, timeout_seconds: 600 }',
      '  - name: reads',
      '    effect: allow',
      '    actions: [orders.read]',
      '    approval: { required: true }',
    ].join('\n');
    const result = compileSources([{ file: 'p.yaml', text }]);
    expect(result.diagnostics.map((d) => [d.severity, d.code, d.line])).toEqual([
      ['warning', 'lint.approval_ignored', 6],
    ]);
    expect(result.diagnostics[0]!.message).toContain('pol_reads');
    expect(result.table).toBeDefined();
    expect(compileSources([{ file: 'p.yaml', text }], { strict: true }).table).toBeUndefined();
  });

  it('reaches the runtime: the winner of a decision carries its approval, through a bundle too', () => {
    const read = readPolicyValue({ ...base, id: 'pol_refunds', approval: { required: true, timeout_seconds: 120 } });
    const { table } = compileItems(read.items);
    const evaluation = evaluate(table!, { agent_id: 'bot', action: 'payments.refund' });
    expect(evaluation.effect).toBe('review');
    expect(table!.byId.get(evaluation.policy_id!)!.policy.approval).toEqual({ required: true, timeout_seconds: 120 });
    const loaded = loadBundle(JSON.parse(JSON.stringify(createBundle(table!))));
    expect(loaded.ok).toBe(true);
    if (loaded.ok)
      expect(loaded.table.byId.get('pol_refunds')!.policy.approval).toEqual({ required: true, timeout_seconds: 120 });
  });
});
