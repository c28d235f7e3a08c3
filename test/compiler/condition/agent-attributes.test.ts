/**
 * `agent.attributes.<path>` in conditions (docs/policies.md#agent-attributes): parsed only as agent.attributes, typed like context.* (any JSON
 * value), read from the request's agent_attributes with the missing-value rule
 * of context.*; `authz explain --agent-attributes` and the policy tests'
 * `agent_attributes:`.
 */
import { describe, expect, it } from 'vitest';
import {
  analyzeCondition,
  checkCondition,
  parseCondition,
  type ConditionAst,
} from '../../../compiler/condition/index.js';
import type { EvaluationInput } from '../../../compiler/policy/types.js';
import { runCli, tempTree } from '../cli/run-cli.js';

const base: EvaluationInput = { agent_id: 'morty', action: 'authzen.can_update_todo' };
const holds = (text: string, request: EvaluationInput): boolean => {
  const analysis = analyzeCondition(text);
  expect(analysis.issues, text).toEqual([]);
  return analysis.evaluate!(request);
};
const codes = (text: string) => {
  const parsed = parseCondition(text);
  return parsed.ast ? checkCondition(parsed.ast).map((i) => i.code) : parsed.issues.map((i) => i.code);
};

describe('agent.attributes in conditions', () => {
  it('parses agent.attributes paths, and refuses agent alone or any other field of agent', () => {
    expect(parseCondition("agent.attributes.team == 'support'").ast).toMatchObject({
      kind: 'compare',
      left: { kind: 'path', root: 'agent', segments: ['attributes', 'team'] },
    });
    expect(parseCondition('agent.attributes == null').issues).toEqual([]);
    const status = parseCondition("agent.status == 'active'");
    expect(status.issues).toEqual([
      expect.objectContaining({
        code: 'condition.unknown_name',
        message: 'agent has only attributes: write agent.attributes.…',
        offset: 6,
      }),
    ]);
    expect(parseCondition('agent == null').issues).toEqual([
      expect.objectContaining({ code: 'condition.unknown_name', offset: 0 }),
    ]);
    expect(parseCondition('agent.attributes.__proto__ == null').issues[0]?.code).toBe('condition.unknown_name');
    // A stored AST is checked the same way.
    const pos = { offset: 0, line: 1, col: 1 };
    expect(
      checkCondition({ kind: 'path', root: 'agent', segments: ['id'], pos } as ConditionAst).map((i) => i.code),
    ).toContain('condition.unknown_name');
  });

  it('types attributes like context values: any comparison is accepted, a condition must still be boolean', () => {
    expect(
      codes("contains(agent.attributes.roles, 'editor') && context.resource.owner == agent.attributes.email"),
    ).toEqual([]);
    expect(codes('agent.attributes.level > 2')).toEqual([]);
    expect(codes("agent.attributes.tier in ['gold', 'silver']")).toEqual([]);
    expect(codes('agent.attributes.vip')).toEqual([]);
    // The known side still has its type: a number and a string can never be equal.
    expect(codes("1 == 'a' || agent.attributes.x == 1")).toEqual(['condition.type']);
  });

  it("reads the request's agent_attributes, with the missing-value rule of context.*", () => {
    const morty = {
      ...base,
      agent_attributes: { email: 'morty@the-citadel.com', roles: ['editor'], level: 3, team: { name: 'smiths' } },
    };
    const own = "contains(agent.attributes.roles, 'editor') && context.resource.owner == agent.attributes.email";
    expect(holds(own, { ...morty, context: { resource: { owner: 'morty@the-citadel.com' } } })).toBe(true);
    expect(holds(own, { ...morty, context: { resource: { owner: 'rick@the-citadel.com' } } })).toBe(false);
    expect(
      holds(own, {
        ...morty,
        agent_attributes: { ...morty.agent_attributes, roles: ['viewer'] },
        context: { resource: { owner: 'morty@the-citadel.com' } },
      }),
    ).toBe(false);
    expect(holds("agent.attributes.team.name == 'smiths'", morty)).toBe(true);
    expect(holds('agent.attributes.level >= 3', morty)).toBe(true);
    // Missing: every comparison is false, != included; == null is true.
    for (const request of [base, { ...base, agent_attributes: null }, { ...base, agent_attributes: {} }]) {
      expect(holds("agent.attributes.tier == 'gold'", request)).toBe(false);
      expect(holds("agent.attributes.tier != 'gold'", request)).toBe(false);
      expect(holds('agent.attributes.tier == null', request)).toBe(true);
      expect(holds("contains(agent.attributes.roles, 'editor')", request)).toBe(false);
      expect(holds("!contains(agent.attributes.roles, 'editor')", request)).toBe(true);
    }
    // Attributes are not the context: a context field of the same name is not read.
    expect(holds("agent.attributes.tier == 'gold'", { ...base, context: { tier: 'gold' } })).toBe(false);
    expect(holds("context.tier == 'gold'", { ...base, agent_attributes: { tier: 'gold' } })).toBe(false);
    // Inherited properties are never seen.
    expect(holds('agent.attributes.toString != null', { ...base, agent_attributes: {} })).toBe(false);
  });
});

const POLICIES = `policies:
  - id: pol_editors
    effect: allow
    agents: ["*"]
    actions: ["docs.edit"]
    condition: "contains(agent.attributes.roles, 'editor')"
`;

describe('authz explain --agent-attributes and the tests agent_attributes', () => {
  it('explain decides with the attributes given, and shows the values the condition read', () => {
    const dir = tempTree({ 'policies.yaml': POLICIES });
    const args = ['explain', '.', '--agent', 'anyone', '--action', 'docs.edit'];
    const allowed = runCli([...args, '--agent-attributes', '{"roles":["editor"]}'], dir);
    expect(allowed.code, allowed.err).toBe(0);
    expect(allowed.out).toContain('decision: allow (policy.matched) by pol_editors');
    const denied = runCli([...args, '--agent-attributes', '{"roles":["viewer"]}'], dir);
    expect(denied.out).toContain('decision: deny');
    expect(denied.out).toContain('agent.attributes.roles = ["viewer"]');
    expect(runCli(args, dir).out).toContain('agent.attributes.roles missing');
    const json = JSON.parse(
      runCli([...args, '--agent-attributes', '{"roles":["editor"]}', '--format', 'json'], dir).out,
    );
    expect(json.request.agent_attributes).toEqual({ roles: ['editor'] });
    // Not JSON, not an object: usage errors (exit 2).
    for (const bad of ['{nope', '[1]', 'null']) {
      const r = runCli([...args, '--agent-attributes', bad], dir);
      expect(r.code).toBe(2);
      expect(r.err).toContain('--agent-attributes');
    }
  });

  it('policy tests pass agent_attributes with the request', () => {
    const tests = `cases:
  - name: an editor edits
    request: { agent_id: a1, action: docs.edit, agent_attributes: { roles: [editor] } }
    expect: { effect: allow, policy: pol_editors }
  - name: a viewer does not
    request: { agent_id: a1, action: docs.edit, agent_attributes: { roles: [viewer] } }
    expect: { effect: deny }
`;
    const dir = tempTree({ 'policies.yaml': POLICIES, 'docs.test.yaml': tests });
    const r = runCli(['test', '.'], dir);
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toMatch(/^2 passed, 0 failed$/m);
    // The attributes decide: swapped, both cases fail.
    const swapped = runCli(
      ['test', '.'],
      tempTree({
        'policies.yaml': POLICIES,
        'docs.test.yaml': tests.replace('[editor]', '[x]').replace('[viewer]', '[editor]'),
      }),
    );
    expect(swapped.out).toMatch(/^0 passed, 2 failed$/m);
    // agent_attributes must be an object.
    const bad = runCli(
      ['test', '.'],
      tempTree({ 'policies.yaml': POLICIES, 'docs.test.yaml': tests.replace('{ roles: [editor] }', 'editor') }),
    );
    expect(bad.code).not.toBe(0);
  });

  it('the Todo scenario example passes its own suite', () => {
    const r = runCli(['test', 'examples/authzen-todo']);
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toMatch(/^18 passed, 0 failed$/m);
  });
});
