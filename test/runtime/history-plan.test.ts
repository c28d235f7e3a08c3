/**
 * A decision's history plan (runtime/history/plan.ts) per agent and action:
 * the candidate policies' probes are by agent and action, so two agents of one
 * action may read different probes, and a plan read again for the same agent
 * and action (from the table's remembered probes) is the plan of a fresh table.
 * A probe and the entry under one scope share one lock key.
 */
import { describe, expect, it } from 'vitest';
import { compileSources, type DecisionTable } from '../../compiler/index.js';
import { planHistory } from '../../runtime/history/plan.js';
import type { Tenant } from '../../runtime/tenant.js';

const POLICIES = [
  'policies:',
  "  - { name: capped, effect: allow, agents: ['a-*'], actions: [x.go], condition: \"history.count('x.go', '1h') < 3\" }",
  "  - { name: open, effect: allow, agents: ['b-*'], actions: [x.go] }",
  "  - { name: users, effect: allow, agents: ['c-*'], actions: [x.go], condition: \"history.count('x.*', '1d', 'user') < 9\" }",
].join('\n');

const tenant: Tenant = { accountId: 'acc_plan', environment: 'test' };
const table = (): DecisionTable => compileSources([{ file: 'p.yaml', text: POLICIES }]).table!;

function plan(t: DecisionTable, agent: string, session: string) {
  const request = {
    agent_id: agent,
    action: 'x.go',
    resource: null,
    amount: null,
    session_id: session,
    on_behalf_of: 'u1',
    context: null,
  };
  const subject = {
    agentId: agent,
    sessionId: session,
    onBehalfOf: 'u1',
    action: 'x.go',
    resource: null,
    amount: null,
    context: null,
  };
  return planHistory(t, request, subject, tenant, { reads: true, retentionDays: null, nowMs: 1_000 });
}

const summary = (p: ReturnType<typeof plan>) =>
  p && { probes: p.probes.map((x) => x.key), locks: p.locks, entryKeys: p.entryKeys, scopes: p.entry?.scopes };

describe('planHistory', () => {
  it("reads each agent's candidate probes, the same when planned again as from a fresh table", () => {
    const t = table();
    const session = (s: string) => `acc_plan\x1ftest\x1fsession\x1f${s}`;
    const user = 'acc_plan\x1ftest\x1fuser\x1fu1';
    const expected = {
      a: {
        probes: ['count|x.go|3600|session|'],
        locks: [session('s1')],
        entryKeys: [session('s1'), user],
        scopes: 5,
      },
      b: { probes: [], locks: [session('s1'), user], entryKeys: [session('s1'), user], scopes: 5 },
      c: {
        probes: ['count|x.*|86400|user|'],
        locks: [session('s1'), user],
        entryKeys: [session('s1'), user],
        scopes: 5,
      },
    };
    for (let round = 0; round < 3; round++)
      for (const agent of ['a', 'b', 'c'] as const) {
        const want = {
          ...expected[agent],
          locks: [...new Set([...expected[agent].locks, ...expected[agent].entryKeys])].sort(),
        };
        expect(summary(plan(t, `${agent}-1`, 's1')), `${agent} round ${round}`).toEqual(want);
        expect(summary(plan(table(), `${agent}-1`, 's1'))).toEqual(want);
      }
    // Another session of the same agent: its own keys, the same probes.
    expect(plan(t, 'a-1', 's2')!.locks).toEqual([session('s2'), user].sort());
    // The probe's check and the entry under the session scope share one key.
    const p = plan(t, 'a-2', 's3')!;
    expect(p.checkKeys).toEqual([session('s3')]);
    expect(p.entryKeys[0]).toBe(p.checkKeys[0]);
  });
});
