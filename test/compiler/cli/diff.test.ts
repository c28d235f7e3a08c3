/** `authz diff OLD NEW` on a copy of examples/ with one policy edited, as folders and as bundles. */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { probeActions } from '../../../compiler/diff/winners.js';
import { repoRoot, runCli } from './run-cli.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'authz-diff-'));
  cpSync(join(repoRoot, 'examples'), join(dir, 'old'), { recursive: true });
  cpSync(join(repoRoot, 'examples'), join(dir, 'new'), { recursive: true });
});

/** Replaces `from` by `to` in a file of the new copy (the text must be there). */
function edit(file: string, from: string, to: string): void {
  const path = join(dir, 'new', file);
  const text = readFileSync(path, 'utf8');
  expect(text).toContain(from);
  writeFileSync(path, text.replace(from, to));
}

// The review of large refunds, made to outrank every other refund policy.
const LARGE_REVIEW = `    priority: 100
    effect: review
    agents: ["support-*"]
    actions: ["payments.refund"]
    resources: ["order:*"]
    condition: "amount > 50"`;

describe('authz diff', () => {
  it('exits 0 and says so when nothing changed (also for a reordered list and a respaced condition)', () => {
    edit(
      'support/policies.yaml',
      'actions: ["orders.read", "customers.read"]',
      'actions: ["customers.read", "orders.read"]',
    );
    edit('support/policies.yaml', 'condition: "amount > 50"', 'condition: "(amount>50)"');
    const r = runCli(['diff', 'old/support', 'new/support'], dir);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^policies: no change \(old\/support -> new\/support\)$/m);
    expect(r.out).toMatch(/^winning policy by action .*: no change$/m);
  });

  it('lists a changed policy field by field and the action whose winner changes; exit 1', () => {
    edit(
      'support/policies.yaml',
      LARGE_REVIEW,
      LARGE_REVIEW.replace('priority: 100', 'priority: 5').replace('amount > 50', 'amount > 80'),
    );
    const r = runCli(['diff', 'old/support', 'new/support'], dir);
    expect(r.code).toBe(1);
    expect(r.out).toContain(
      [
        'policies: 0 added, 0 removed, 1 changed (old/support -> new/support)',
        '  ~ pol_support_refund_large_review',
        '      priority: 100 -> 5',
        '      condition: "amount > 50" -> "amount > 80"',
      ].join('\n'),
    );
    expect(r.out).toMatch(
      /1 changed\n {2}payments\.refund: pol_support_staff_records_deny \(deny, priority 20\) -> pol_support_refund_large_review \(review, priority 5\) {2}\[from payments\.refund\]\n/,
    );
  });

  it('finds policies added and removed across the examples, bundle against folder, in JSON', () => {
    // Rename the id of one policy (removed + added) and turn another to shadow (it stops winning).
    edit('purchasing/legacy-catalog.yaml', 'id: pol_', 'id: pol_renamed_');
    edit(
      'support/policies.yaml',
      'name: support-account-deletion-deny\n',
      'name: support-account-deletion-deny\n    state: shadow\n',
    );
    expect(runCli(['compile', 'old', '-o', 'old.json'], dir).code).toBe(0);
    const r = runCli(['diff', 'old.json', 'new', '--format', 'json'], dir);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.out);
    expect(out.changed).toBe(true);
    const removed = out.policies.removed.map((p: { id: string }) => p.id);
    expect(removed).toHaveLength(1);
    expect(out.policies.added.map((p: { id: string }) => p.id)).toEqual([removed[0].replace('pol_', 'pol_renamed_')]);
    expect(out.policies.changed).toEqual([
      { id: 'pol_support_account_deletion_deny', fields: [{ field: 'state', old: 'enabled', new: 'shadow' }] },
    ]);
    // The winners, on the support set alone (across every example, the infrastructure guardrail on *.delete wins).
    expect(runCli(['compile', 'old/support', '-o', 'support.json'], dir).code).toBe(0);
    const support = JSON.parse(runCli(['diff', 'support.json', 'new/support', '--format', 'json'], dir).out);
    const byAction = new Map(support.winners.changes.map((c: { action: string }) => [c.action, c]));
    expect(byAction.get('accounts.delete')).toEqual({
      action: 'accounts.delete',
      patterns: ['accounts.*', 'accounts.delete'],
      old: { policy_id: 'pol_support_account_deletion_deny', effect: 'deny', priority: 10 },
      new: { policy_id: 'pol_support_tier2_account_maintenance', effect: 'allow', priority: 100 },
    });
    // customers.delete had no other policy: nobody wins now.
    expect(byAction.get('customers.delete')).toMatchObject({ new: null });
    expect(byAction.size).toBe(2);
  });

  it('exits 2 on a usage error or a set that does not compile', () => {
    expect(runCli(['diff', 'old'], dir).code).toBe(2);
    expect(runCli(['diff', 'old', 'missing'], dir).code).toBe(2);
    expect(runCli(['diff', 'old', 'new', '--sample', '0'], dir).code).toBe(2);
    edit('support/policies.yaml', 'effect: deny', 'effect: perhaps');
    const r = runCli(['diff', 'old', 'new'], dir);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /new does not compile:\n {2}new\/support\/policies\.yaml:\d+:\d+: effect must be one of allow, deny, review/,
    );
  });
});

describe('the actions diff probes', () => {
  it('derives concrete actions from each pattern, with <other> for a part no policy names', () => {
    const probes = probeActions(['pay.refund', 'pay.*', '*.read', 'other.list', '*']);
    expect(probes.map((p) => p.label)).toEqual(
      [
        '<other>.<other>',
        '<other>.read',
        'other.read',
        'pay.<other>',
        'pay.list',
        'pay.read',
        'pay.refund',
        'other.list',
      ].sort(),
    );
    // "other" is a namespace here, so <other> is probed under another name.
    expect(probes.find((p) => p.label === '<other>.read')).toEqual({
      label: '<other>.read',
      action: 'other1.read',
      patterns: ['*', '*.read'],
    });
    expect(probes.find((p) => p.label === 'pay.read')?.patterns).toEqual(['*', '*.read', 'pay.*']);
    expect(probeActions(['a.*', 'a.v1', 'a.v2', 'a.v3'], 2).map((p) => p.label)).toEqual([
      'a.<other>',
      'a.v1',
      'a.v2',
      'a.v3',
    ]);
  });
});
