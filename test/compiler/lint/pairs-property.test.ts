/**
 * Property: forEachOverlappingPair calls its visitor once per unordered pair of
 * rows (the higher-ranked first), and never misses a pair that can share an agent
 * and an action (checked against every pair, by brute force).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileItems } from '../../../compiler/compile.js';
import { forEachOverlappingPair } from '../../../compiler/lint/pairs.js';
import { actionPatternsOverlap } from '../../../compiler/patterns/action.js';
import { globsIntersect } from '../../../compiler/patterns/glob.js';
import { readPolicyValue } from '../../../compiler/policy/read.js';

const AGENT_PATTERNS = ['a1', 'a2', 'bot-*', '*-1', 'bot-2*', '*', 'x', 'bot-22'];
const ACTION_PATTERNS = ['pay.refund', 'pay.charge', 'orders.read', 'pay.*', 'orders.*', '*.read', '*'];

const policyArb = fc.record(
  {
    effect: fc.constantFrom('allow', 'deny', 'review'),
    priority: fc.constantFrom(1, 10, 100),
    agents: fc.uniqueArray(fc.constantFrom(...AGENT_PATTERNS), { minLength: 1, maxLength: 2 }),
    actions: fc.uniqueArray(fc.constantFrom(...ACTION_PATTERNS), { minLength: 1, maxLength: 2 }),
  },
  { requiredKeys: ['effect', 'priority', 'actions'] },
);

describe('overlapping pairs', () => {
  it('visits every pair that may share an agent and an action, each once, higher-ranked first', () => {
    fc.assert(
      fc.property(fc.array(policyArb, { maxLength: 30 }), (values) => {
        const items = values.flatMap((v, i) => readPolicyValue({ ...v, id: `pol_q${i}`, name: `q${i}` }).items);
        const table = compileItems(items, { lint: false }).table!;
        const seen = new Set<string>();
        forEachOverlappingPair(table, (a, b) => {
          expect(a.index).toBeLessThan(b.index);
          const key = `${a.policy.id}|${b.policy.id}`;
          expect(seen.has(key)).toBe(false);
          seen.add(key);
        });
        const rows = table.rows;
        for (let i = 0; i < rows.length; i++) {
          for (let j = i + 1; j < rows.length; j++) {
            const p = rows[i]!.policy;
            const q = rows[j]!.policy;
            const agents = !p.agents || !q.agents || p.agents.some((x) => q.agents!.some((y) => globsIntersect(x, y)));
            const actions = p.actions.some((x) => q.actions.some((y) => actionPatternsOverlap(x, y)));
            if (agents && actions) expect(seen.has(`${p.id}|${q.id}`), `${p.id} ${q.id}`).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
