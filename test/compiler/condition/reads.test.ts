/**
 * What a condition reads, from its tree (compiler/condition/ast.ts): whether it
 * reads `session.labels` (the service reads a session's labels only for such
 * rows), and the one walk the analyses share.
 */
import { describe, expect, it } from 'vitest';
import {
  conditionNodes,
  parseCondition,
  readsSessionLabels,
  type ConditionAst,
} from '../../../compiler/condition/index.js';
import { compileItems } from '../../../compiler/compile.js';
import { readPolicyValue } from '../../../compiler/policy/read.js';

const ast = (text: string): ConditionAst => {
  const parsed = parseCondition(text);
  if (!parsed.ast) throw new Error(`did not parse: ${text}`);
  return parsed.ast;
};

describe('readsSessionLabels', () => {
  it('finds session.labels anywhere in the tree: a call, ||, !, a comparison, a list', () => {
    for (const text of [
      "contains(session.labels, 'private')",
      "amount > 5 || contains(session.labels, 'untrusted')",
      "!(contains(session.labels, 'private') && context.to != 'me')",
      "'private' in session.labels",
      "history.count('x.go', '1h') < 3 && contains(session.labels, 'pii')",
    ]) {
      expect(readsSessionLabels(ast(text)), text).toBe(true);
    }
  });

  it('is false for conditions that only mention labels in a string or a context field', () => {
    for (const text of [
      "context.note == 'session.labels'",
      "contains(context.labels, 'private')",
      "history.count('session.labels', '1h') < 3",
      'amount < 10',
    ]) {
      expect(readsSessionLabels(ast(text)), text).toBe(false);
    }
  });

  it('conditionNodes visits every node once, in source order', () => {
    const paths = conditionNodes(
      ast("context.a == 1 && (amount > 2 || contains(session.labels, 'x'))"),
      (n): n is Extract<ConditionAst, { kind: 'path' }> => n.kind === 'path',
    );
    expect(paths.map((p) => [p.root, ...p.segments].join('.'))).toEqual(['context.a', 'amount', 'session.labels']);
  });

  it("a table's rows say whether they read labels", () => {
    const items = [
      {
        id: 'pol_reads',
        name: 'reads',
        effect: 'deny',
        actions: ['email.send'],
        condition: "contains(session.labels, 'private')",
      },
      {
        id: 'pol_not',
        name: 'not',
        effect: 'allow',
        actions: ['email.send'],
        condition: "context.note == 'session.labels'",
      },
      { id: 'pol_none', name: 'none', effect: 'allow', actions: ['files.read'] },
    ].flatMap((v) => readPolicyValue(v).items);
    const table = compileItems(items, { lint: false }).table!;
    expect(Object.fromEntries(table.rows.map((r) => [r.id, r.readsLabels]))).toEqual({
      pol_reads: true,
      pol_not: false,
      pol_none: false,
    });
  });
});
