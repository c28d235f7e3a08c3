import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadBundle } from '../../../compiler/bundle/load.js';
import { createBundle, policySetHash } from '../../../compiler/bundle/write.js';
import { evaluate } from '../../../compiler/table/evaluate.js';
import { tableFromYaml } from '../table/helpers.js';

const YAML = `policies:
  - { name: b-allow, effect: allow, agents: ["bot-*", "a1"], actions: ["pay.*", "orders.read"], resources: ["order:*"], condition: "amount <= 10" }
  - { name: a-deny, priority: 5, effect: deny, actions: ["*.delete"] }
  - { name: c-review, effect: review, actions: ["*"], agents: ["x"] }
  - { name: d-off, state: disabled, effect: allow, actions: ["legacy.run"] }
`;

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('bundles', () => {
  const table = tableFromYaml(YAML);
  const bundle = createBundle(table);

  it('round-trips: the loaded table decides exactly like the compiled one', () => {
    const loaded = loadBundle(clone(bundle));
    expect(loaded.ok).toBe(true);
    if (!loaded.ok) return;
    const agents = ['bot-1', 'a1', 'x', 'z'];
    const actions = ['pay.refund', 'orders.read', 'orders.delete', 'legacy.run', 'misc.do'];
    fc.assert(
      fc.property(
        fc.constantFrom(...agents),
        fc.constantFrom(...actions),
        fc.option(fc.constantFrom('order:1', 'doc:2')),
        fc.constantFrom(1, 50),
        (agent_id, action, resource, amount) => {
          const request = { agent_id, action, resource, amount };
          expect(evaluate(loaded.table, request)).toEqual(evaluate(table, request));
        },
      ),
    );
  });

  it('hashes the canonical policies, independent of order', () => {
    expect(bundle.hash).toBe(policySetHash([...table.rows].reverse().map((r) => r.policy)));
    expect(bundle.policies.map((p) => p.id)).toEqual(['pol_a_deny', 'pol_b_allow', 'pol_c_review', 'pol_d_off']);
  });

  it('refuses a newer or older format version with a clear message', () => {
    for (const [version, word] of [
      [2, 'newer'],
      [0, 'older'],
    ] as const) {
      const r = loadBundle({ ...clone(bundle), format_version: version });
      expect(r.ok).toBe(false);
      if (!r.ok)
        expect(r.problems[0]!.message).toMatch(
          new RegExp(`format version ${version} is ${word} than the version this runtime reads \\(1\\)`),
        );
    }
  });

  it('refuses something that is not a bundle', () => {
    for (const value of [null, 42, [], { policies: [] }, 'x']) {
      const r = loadBundle(value);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.problems[0]!.message).toMatch(/not an agent-authz bundle/);
    }
  });

  it('detects policies altered after compile', () => {
    const altered = clone(bundle);
    altered.policies[1]!.effect = 'deny';
    const r = loadBundle(altered);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.message).toMatch(/hash does not match/);
  });

  it('detects a table that does not fit its policies', () => {
    const bad = clone(bundle);
    bad.table.rows = [...bad.table.rows].reverse();
    const r = loadBundle(bad);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.message).toMatch(/rank order/);
    const dangling = clone(bundle);
    dangling.table.actions.wildcard!.wildcard!.any.push(99);
    const d = loadBundle(dangling);
    expect(d.ok).toBe(false);
    const missing = clone(bundle);
    missing.table.rows.pop();
    expect(loadBundle(missing).ok).toBe(false);
  });

  it('rejects schema violations', () => {
    const bad = clone(bundle) as unknown as Record<string, unknown>;
    bad.extra = 1;
    const r = loadBundle(bad);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.message).toMatch(/schemas\/bundle\.schema\.json/);
  });
});
