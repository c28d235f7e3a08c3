/**
 * Property: a table patched for a sequence of edits (add, replace, delete, state
 * changes to and from shadow and disabled) decides exactly as the table built
 * whole from the same policies, through the index, the linear scan and with the
 * shadow policies enabled; its rows are in the same order and every index leaf
 * holds the same rows in the same order. The tables it was patched from are left
 * as they were.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createBundle, loadBundle } from '../../../compiler/index.js';
import { compileItems } from '../../../compiler/compile.js';
import { readPolicyValue, type ReadPolicy } from '../../../compiler/policy/read.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';
import type { ActionTrie } from '../../../compiler/table/action-trie.js';
import type { AgentIndex } from '../../../compiler/table/agent-index.js';
import type { DecisionTable } from '../../../compiler/table/build.js';
import { evaluate, evaluateLinear, evaluateWithShadow } from '../../../compiler/table/evaluate.js';
import { patchTable } from '../../../compiler/table/patch.js';

const AGENTS = ['a1', 'a2', 'bot-1', 'bot-22', 'x'];
const AGENT_PATTERNS = ['a1', 'a2', 'bot-*', '*-1', 'bot-2*', '*', 'x', '*o*'];
const ACTIONS = ['pay.refund', 'pay.charge', 'orders.read', 'orders.delete', 'infra.deploy'];
const ACTION_PATTERNS = [...ACTIONS, 'pay.*', 'orders.*', '*.read', '*.delete', '*'];
const RESOURCES = ['order:1', 'order:vip-2', 'doc:1', 'prod:db'];
const RESOURCE_PATTERNS = ['order:*', 'order:vip-*', 'doc:*', '*:db', '*', 'doc:1'];
const CONDITIONS = ['amount <= 50', "context.tier == 'gold'", 'resource == null'];

const policyArb = fc.record(
  {
    effect: fc.constantFrom('allow', 'deny', 'review'),
    priority: fc.constantFrom(1, 10, 10, 50, 100),
    state: fc.constantFrom('enabled', 'enabled', 'disabled', 'shadow'),
    agents: fc.uniqueArray(fc.constantFrom(...AGENT_PATTERNS), { minLength: 1, maxLength: 3 }),
    actions: fc.uniqueArray(fc.constantFrom(...ACTION_PATTERNS), { minLength: 1, maxLength: 3 }),
    resources: fc.uniqueArray(fc.constantFrom(...RESOURCE_PATTERNS), { minLength: 1, maxLength: 2 }),
    condition: fc.constantFrom(...CONDITIONS),
  },
  { requiredKeys: ['effect', 'priority', 'state', 'actions'] },
);

const requestArb: fc.Arbitrary<EvaluationInput> = fc.record(
  {
    agent_id: fc.constantFrom(...AGENTS),
    action: fc.constantFrom(...ACTIONS),
    resource: fc.constantFrom(...RESOURCES),
    amount: fc.constantFrom(0, 20, 60),
    context: fc.constantFrom({}, { tier: 'gold' }),
  },
  { requiredKeys: ['agent_id', 'action'] },
);

/** One edit: add a policy, replace the k-th one (by position), delete it, or change its state. */
const editArb = fc.oneof(
  policyArb.map((value) => ({ kind: 'add' as const, value })),
  fc.tuple(fc.nat(), policyArb).map(([k, value]) => ({ kind: 'replace' as const, k, value })),
  fc.nat().map((k) => ({ kind: 'delete' as const, k })),
  fc
    .tuple(fc.nat(), fc.constantFrom('enabled', 'disabled', 'shadow'))
    .map(([k, state]) => ({ kind: 'state' as const, k, state })),
);

let serial = 0;
function read(value: object, id: string): ReadPolicy {
  const r = readPolicyValue({ ...value, id, name: `n_${id}_${serial++}` });
  if (r.diagnostics.length) throw new Error(JSON.stringify(r.diagnostics));
  return r.items[0]!;
}

/** A leaf as policy ids, bucket by bucket (key order aside). */
function leafShape(leaf: AgentIndex | null | undefined): unknown {
  if (!leaf) return null;
  const ids = (rows: readonly { policy: { id: string } }[]) => rows.map((r) => r.policy.id);
  const sorted = <T>(entries: Array<[string, T]>) => entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    exact: sorted([...leaf.exact].map(([k, rows]) => [k, ids(rows)])),
    prefixed: sorted(
      [...leaf.prefixed.byAffix].map(([k, es]) => [k, es.map((e) => `${e.row.policy.id}:${e.glob.source}`)]),
    ),
    prefixLengths: leaf.prefixed.lengths,
    suffixed: sorted(
      [...leaf.suffixed.byAffix].map(([k, es]) => [k, es.map((e) => `${e.row.policy.id}:${e.glob.source}`)]),
    ),
    suffixLengths: leaf.suffixed.lengths,
    globs: leaf.globs.map((e) => `${e.row.policy.id}:${e.glob.source}`),
    any: ids(leaf.any),
  };
}

function trieShape(trie: ActionTrie): unknown {
  const node = (n: ActionTrie['wildcard']) =>
    n && {
      exact: [...n.exact].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, l]) => [k, leafShape(l)]),
      wildcard: leafShape(n.wildcard),
    };
  return {
    exact: [...trie.exact].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => [k, node(n)]),
    wildcard: node(trie.wildcard),
  };
}

function sameTables(patched: DecisionTable, built: DecisionTable, requests: readonly EvaluationInput[]): void {
  expect(patched.rows.map((r) => r.policy.id)).toEqual(built.rows.map((r) => r.policy.id));
  expect([...patched.byId.keys()].sort()).toEqual([...built.byId.keys()].sort());
  for (let i = 1; i < patched.rows.length; i++)
    expect(patched.rows[i]!.index).toBeGreaterThan(patched.rows[i - 1]!.index);
  expect(trieShape(patched.trie)).toEqual(trieShape(built.trie));
  expect(patched.shadow?.rows.map((r) => r.policy.id) ?? null).toEqual(
    built.shadow?.rows.map((r) => r.policy.id) ?? null,
  );
  if (patched.shadow && built.shadow) expect(trieShape(patched.shadow.trie)).toEqual(trieShape(built.shadow.trie));
  for (const request of requests) {
    const want = evaluate(built, request);
    expect(evaluate(patched, request)).toEqual(want);
    expect(evaluateLinear(patched, request)).toEqual(want);
    expect(evaluateWithShadow(patched, request)).toEqual(evaluateWithShadow(built, request));
  }
}

describe('patched decision tables', () => {
  it('decide as the table built whole, over random edit sequences', () => {
    fc.assert(
      fc.property(
        fc.array(policyArb, { maxLength: 15 }),
        fc.array(editArb, { minLength: 1, maxLength: 12 }),
        fc.array(requestArb, { minLength: 1, maxLength: 12 }),
        (values, edits, requests) => {
          let items = values.map((v, i) => read(v, `pol_s${i}`));
          let table = compileItems(items, { lint: false }).table!;
          let next = 0;
          for (const edit of edits) {
            const before = table;
            const beforeAnswers = requests.map((r) => evaluate(before, r));
            let remove: string[] = [];
            let add: ReadPolicy[] = [];
            if (edit.kind === 'add') add = [read(edit.value, `pol_n${next++}`)];
            else if (items.length > 0) {
              const old = items[edit.k % items.length]!;
              remove = [old.policy.id];
              if (edit.kind === 'replace') add = [read(edit.value, old.policy.id)];
              if (edit.kind === 'state')
                add = [read({ ...old.policy, state: edit.state, id: undefined, name: undefined }, old.policy.id)];
            }
            items = [...items.filter((i) => !remove.includes(i.policy.id)), ...add];
            const patched = patchTable(table, remove, add);
            expect(patched).not.toBeNull();
            const built = compileItems(items, { lint: false }).table!;
            sameTables(patched!, built, requests);
            // The table it came from still decides as before.
            expect(requests.map((r) => evaluate(before, r))).toEqual(beforeAnswers);
            table = patched!;
          }
          // A bundle written from the patched table has the built table's policies and hash, and loads to its index.
          const bundle = createBundle(table);
          const builtBundle = createBundle(compileItems(items, { lint: false }).table!);
          expect([bundle.hash, bundle.policies]).toEqual([builtBundle.hash, builtBundle.policies]);
          const loaded = loadBundle(bundle);
          if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
          sameTables(loaded.table, compileItems(items, { lint: false }).table!, requests);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses what the full compile must report: a duplicate id or name, an unknown id', () => {
    const a = read({ effect: 'allow', actions: ['orders.read'] }, 'pol_a');
    const b = read({ effect: 'deny', actions: ['orders.read'] }, 'pol_b');
    const table = compileItems([a, b], { lint: false }).table!;
    expect(patchTable(table, [], [read({ effect: 'deny', actions: ['x.y'] }, 'pol_a')])).toBeNull();
    expect(patchTable(table, ['pol_zz'], [])).toBeNull();
    const sameName = readPolicyValue({ id: 'pol_c', name: a.policy.name, effect: 'deny', actions: ['x.y'] }).items[0]!;
    expect(patchTable(table, [], [sameName])).toBeNull();
    // Replacing a policy under its own name is fine.
    const renamed = readPolicyValue({ id: 'pol_a', name: a.policy.name, effect: 'deny', actions: ['x.y'] }).items[0]!;
    expect(patchTable(table, ['pol_a'], [renamed])?.byId.get('pol_a')?.policy.effect).toBe('deny');
  });

  it('answers null when no rank is left between two rows (the caller then builds the table whole)', () => {
    const base = ['pol_0', 'pol_a', 'pol_z'].map((id) => read({ effect: 'allow', priority: 10, actions: ['a.b'] }, id));
    let table: DecisionTable | null = compileItems(base, { lint: false }).table!;
    let n = 0;
    // Ids between pol_a and pol_z, each ranking just before the previous one: halving the gap each time.
    for (; n < 59 && table; n++)
      table = patchTable(
        table,
        [],
        [read({ effect: 'allow', priority: 10, actions: ['a.b'] }, `pol_a${'0'.repeat(59 - n)}`)],
      );
    expect(table).toBeNull();
    expect(n).toBeGreaterThan(40); // about 52 halvings of the gap between ranks 1 and 2
  });
});
