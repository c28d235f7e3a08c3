/**
 * The Cerbos peer's policy translation (bench/http/cerbos-policies.ts): the bench
 * policies become principal policies per agent (globs expanded to the agents
 * named), guardrails for every agent become resource policies for every role,
 * resource globs become conditions on the id, review becomes EFFECT_DENY. The
 * answers themselves are compared against the running PDP by the bench before
 * it times anything (it needs the binary, installed on demand there).
 */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cerbosPolicies } from '../../bench/http/cerbos-policies.js';
import { cerbosBody } from '../../bench/http/cerbos.js';
import { BENCH_POLICIES } from '../../bench/http/policies.js';
import type { Policy } from '../../compiler/index.js';
import type { JsonObject } from '../helpers/json.js';

const policy = (p: Partial<Policy> & Pick<Policy, 'id' | 'effect' | 'actions'>): Policy => ({
  name: p.id,
  state: 'enabled',
  priority: 100,
  ...p,
});

describe('cerbosPolicies', () => {
  it('gives the bench agent one principal policy with the bench rules', () => {
    const files = cerbosPolicies(BENCH_POLICIES, ['bench-1', 'other-1']);
    expect(files).toHaveLength(1);
    const doc = parse(files[0]!.text) as JsonObject;
    expect(doc.principalPolicy.principal).toBe('bench-1');
    const order = doc.principalPolicy.rules.find((r: JsonObject) => r.resource === 'order');
    const byAction = Object.fromEntries(order.actions.map((a: JsonObject) => [a.action, a.effect]));
    expect(byAction['orders.read']).toBe('EFFECT_ALLOW');
    // order:* is every order: no condition on the id.
    expect(order.actions.find((a: JsonObject) => a.action === 'orders.read').condition).toBeUndefined();
    const everyKind = doc.principalPolicy.rules.find((r: JsonObject) => r.resource === '*');
    expect(everyKind.actions).toEqual([{ action: 'orders.delete', effect: 'EFFECT_DENY' }]);
  });

  it('expands agent globs, maps review to deny, exact resources to equality, and guardrails to resource policies', () => {
    const files = cerbosPolicies(
      [
        policy({ id: 'a', effect: 'review', agents: ['team-1-*'], actions: ['ns1.*'], resources: ['doc:7:report'] }),
        policy({ id: 'g', effect: 'deny', actions: ['ns2.*'], resources: ['secret:*'] }),
        policy({ id: 'off', effect: 'allow', state: 'disabled', agents: ['team-1-000001'], actions: ['ns3.read'] }),
      ],
      ['team-1-000001', 'team-1-000002', 'team-2-000003'],
    );
    const docs = files.map((f) => parse(f.text) as JsonObject);
    const principals = docs.filter((d) => d.principalPolicy).map((d) => d.principalPolicy);
    expect(principals.map((p) => p.principal).sort()).toEqual(['team-1-000001', 'team-1-000002']);
    expect(principals[0].rules).toEqual([
      {
        resource: 'doc',
        actions: [{ action: 'ns1.*', effect: 'EFFECT_DENY', condition: { match: { expr: 'R.id == "7:report"' } } }],
      },
    ]);
    const resource = docs.find((d) => d.resourcePolicy)!.resourcePolicy;
    expect(resource.resource).toBe('secret');
    expect(resource.rules).toEqual([{ actions: ['ns2.*'], effect: 'EFFECT_DENY', roles: ['*'] }]);
  });

  it('sends our request as a Cerbos check of kind and id', () => {
    expect(cerbosBody({ agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' })).toEqual({
      requestId: 'bench',
      principal: { id: 'bench-1', roles: ['agent'] },
      resources: [{ actions: ['orders.read'], resource: { kind: 'order', id: '1' } }],
    });
  });
});
