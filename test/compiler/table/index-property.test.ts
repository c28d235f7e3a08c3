/**
 * Property: the indexed table (action trie + agent index) answers exactly as the
 * unindexed scan of every row, and both answer as a reference written here
 * independently from steps 4-6 of docs/policies.md#how-a-request-is-decided.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileItems } from '../../../compiler/compile.js';
import { readPolicyValue } from '../../../compiler/policy/read.js';
import type { EvaluationInput, Policy } from '../../../compiler/policy/types.js';
import { evaluate, evaluateLinear, type Evaluation } from '../../../compiler/table/evaluate.js';

const AGENTS = ['a1', 'a2', 'bot-1', 'bot-22', 'x'];
const AGENT_PATTERNS = ['a1', 'a2', 'bot-*', '*-1', 'bot-2*', '*', 'x'];
const ACTIONS = ['pay.refund', 'pay.charge', 'orders.read', 'orders.delete', 'infra.deploy'];
const ACTION_PATTERNS = [...ACTIONS, 'pay.*', 'orders.*', '*.read', '*.delete', '*'];
const RESOURCES = ['order:1', 'order:vip-2', 'doc:1', 'prod:db'];
const RESOURCE_PATTERNS = ['order:*', 'order:vip-*', 'doc:*', '*:db', '*', 'doc:1'];
const CONDITIONS = [
  'amount <= 50',
  "context.tier == 'gold'",
  "context.tier != 'gold'",
  'amount > 10 && startsWith(resource, "order:")',
  "!(context.tier == 'gold')",
  'resource == null',
];

const policyArb = fc.record(
  {
    effect: fc.constantFrom('allow', 'deny', 'review'),
    priority: fc.constantFrom(1, 10, 10, 50, 100),
    state: fc.constantFrom('enabled', 'enabled', 'enabled', 'disabled'),
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
    amount: fc.constantFrom(0, 5, 20, 60),
    context: fc.constantFrom({}, { tier: 'gold' }, { tier: 'silver' }),
  },
  { requiredKeys: ['agent_id', 'action'] },
);

function compile(values: object[]) {
  const items = values.flatMap((v, i) => {
    const r = readPolicyValue({ ...v, id: `pol_p${i}` });
    if (r.diagnostics.length) throw new Error(JSON.stringify(r.diagnostics));
    return r.items;
  });
  const result = compileItems(items, { lint: false });
  return result.table!;
}

/** Steps 4-6 of docs/policies.md#how-a-request-is-decided, written directly from its text, over plain policies. */
function reference(
  policies: Policy[],
  request: EvaluationInput,
  holds: (p: Policy) => boolean,
): Omit<Evaluation, 'warnings'> & { conflict: boolean } {
  const glob = (pattern: string, s: string) =>
    new RegExp(
      `^${pattern
        .split('*')
        .map((x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    ).test(s);
  const actionOk = (p: string) => {
    const [ns, verb] = p === '*' ? ['*', '*'] : p.split('.');
    const [rn, rv] = request.action.split('.');
    return (ns === '*' || ns === rn) && (verb === '*' || verb === rv);
  };
  const onAgentAction = policies.filter(
    (p) => (!p.agents || p.agents.some((g) => glob(g, request.agent_id))) && p.actions.some(actionOk),
  );
  const candidates = onAgentAction.filter((p) => p.state === 'enabled');
  if (candidates.length === 0) {
    return {
      effect: 'deny',
      reason: onAgentAction.length > 0 ? 'policy.disabled' : 'policy.not_found',
      policy_id: null,
      matched: [],
      conflict: false,
    };
  }
  const resourceOk = (p: Policy) =>
    !p.resources || (request.resource != null && p.resources.some((g) => glob(g, request.resource!)));
  const survivors = candidates.filter((p) => resourceOk(p) && holds(p));
  if (survivors.length === 0) {
    const allows = candidates.filter((p) => p.effect === 'allow');
    const reason =
      allows.length > 0 && allows.every((p) => !resourceOk(p)) ? 'resource.not_allowed' : 'policy.not_found';
    return { effect: 'deny', reason, policy_id: null, matched: [], conflict: false };
  }
  const rank = { deny: 0, review: 1, allow: 2 };
  survivors.sort((a, b) => a.priority - b.priority || rank[a.effect] - rank[b.effect] || (a.id < b.id ? -1 : 1));
  const winner = survivors[0]!;
  return {
    effect: winner.effect,
    reason: 'policy.matched',
    policy_id: winner.id,
    matched: survivors,
    conflict: survivors.some((p) => p.effect !== winner.effect),
  };
}

describe('decision table index', () => {
  it('answers exactly as the linear scan and the reference written from the documented steps', () => {
    fc.assert(
      fc.property(
        fc.array(policyArb, { minLength: 0, maxLength: 25 }),
        fc.array(requestArb, { minLength: 1, maxLength: 20 }),
        (values, requests) => {
          const table = compile(values);
          for (const request of requests) {
            const indexed = evaluate(table, request);
            expect(indexed).toEqual(evaluateLinear(table, request));
            const ref = reference(
              table.rows.map((r) => r.policy),
              request,
              (p) => table.byId.get(p.id)!.condition?.(request) ?? true,
            );
            expect({
              effect: indexed.effect,
              reason: indexed.reason,
              policy_id: indexed.policy_id,
              matched: indexed.matched.map((p) => p.id),
            }).toEqual({
              effect: ref.effect,
              reason: ref.reason,
              policy_id: ref.policy_id,
              matched: ref.matched.map((p) => p.id),
            });
            expect(indexed.warnings.length > 0).toBe(ref.conflict);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
