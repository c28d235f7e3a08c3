/**
 * The benchmark peers (Cedar, Casbin) answer the same allow/deny as our semantics
 * on the generated bench sets, so the comparison is apples to apples. The
 * reference here is a deliberately naive linear scan written from docs/policies.md#how-a-request-is-decided, not
 * our compiler's evaluator.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { generatePolicySet, policySetToYaml } from '../../bench/compiler/generate.js';
import {
  cedarAgreesWithPriorities,
  policyToCedar,
  prepareCedar,
  type CedarPeer,
} from '../../bench/compiler/peers/cedar.js';
import { prepareCasbin } from '../../bench/compiler/peers/casbin.js';
import type { EvaluationInput, Policy } from '../../compiler/index.js';

const globCache = new Map<string, RegExp>();
function globRe(glob: string): RegExp {
  let re = globCache.get(glob);
  if (!re) globCache.set(glob, (re = compileRe(glob)));
  return re;
}
function compileRe(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split('*')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
}

function actionMatches(pattern: string, action: string): boolean {
  if (pattern === '*') return true;
  const [pn, pv] = pattern.split('.');
  const [an, av] = action.split('.');
  return (pn === '*' || pn === an) && (pv === '*' || pv === av);
}

/** Our semantics, linear: enabled matches, lowest priority, deny > review > allow; review counts as allow. */
function reference(policies: readonly Policy[], req: EvaluationInput): 'allow' | 'deny' {
  const rank = { deny: 0, review: 1, allow: 2 } as const;
  let best: Policy | null = null;
  for (const p of policies) {
    if (p.state !== 'enabled') continue;
    if (p.agents && !p.agents.some((g) => globRe(g).test(req.agent_id))) continue;
    if (!p.actions.some((a) => actionMatches(a, req.action))) continue;
    if (p.resources) {
      if (req.resource === undefined || req.resource === null) continue;
      const resource = req.resource;
      if (!p.resources.some((g) => globRe(g).test(resource))) continue;
    }
    if (
      best === null ||
      p.priority < best.priority ||
      (p.priority === best.priority && rank[p.effect] < rank[best.effect])
    )
      best = p;
  }
  return best === null || best.effect === 'deny' ? 'deny' : 'allow';
}

const cedarPeers: CedarPeer[] = [];
afterAll(() => {
  for (const peer of cedarPeers) peer.dispose();
});

async function checkSet(policies: Policy[], requests: EvaluationInput[]) {
  const expected = requests.map((r) => reference(policies, r));
  const cedar = prepareCedar(policies);
  cedarPeers.push(cedar);
  const casbin = await prepareCasbin(policies);
  const casbinDenyOverride = await prepareCasbin(policies, { effect: 'deny-override' });
  const mismatches: string[] = [];
  requests.forEach((req, i) => {
    const got = {
      cedar: cedar.evaluate(req),
      casbin: casbin.evaluate(req),
      casbinDenyOverride: casbinDenyOverride.evaluate(req),
    };
    for (const [peer, answer] of Object.entries(got)) {
      if (answer !== expected[i]) mismatches.push(`${peer} ${JSON.stringify(req)}: ${answer}, expected ${expected[i]}`);
    }
  });
  expect(mismatches.slice(0, 10)).toEqual([]);
  return expected;
}

describe('generated bench sets', () => {
  it('are deterministic and shaped as specified', () => {
    const a = generatePolicySet(1000, 42);
    const b = generatePolicySet(1000, 42);
    expect(b).toEqual(a);
    expect(generatePolicySet(1000, 43).policies).not.toEqual(a.policies);
    expect(a.policies).toHaveLength(1000);
    expect(a.requests).toHaveLength(1000);
    expect(new Set(a.policies.map((p) => p.id)).size).toBe(1000);
    expect(new Set(a.policies.map((p) => p.name)).size).toBe(1000);
    expect(a.policies[0]!.id).toBe('pol_b000001');
    const wildcard = a.policies.filter(
      (p) => !p.agents || p.agents.some((g) => g.includes('*')) || p.actions.some((x) => x.includes('*')),
    );
    expect(wildcard.length).toBe(50);
    expect(a.policies.filter((p) => p.effect === 'deny').length).toBeGreaterThan(50);
    expect(a.policies.filter((p) => p.resources).length).toBeGreaterThan(100);
    expect(
      a.policies.every(
        (p) =>
          /^pol_[A-Za-z0-9_]{1,64}$/.test(p.id) &&
          p.actions.every((x) => /^(\*|(\*|[a-z][a-z0-9_]*)\.(\*|[a-z][a-z0-9_]*))$/.test(x)),
      ),
    ).toBe(true);
    expect(cedarAgreesWithPriorities(a.policies)).toBe(true);
    // The request mix is neither all-allow nor all-deny.
    const answers = a.requests.map((r) => reference(a.policies, r));
    const allows = answers.filter((x) => x === 'allow').length;
    expect(allows).toBeGreaterThan(300);
    expect(allows).toBeLessThan(800);
  });

  it('round-trips through policySetToYaml', () => {
    const { policies } = generatePolicySet(200, 5, { disabledFraction: 0.1 });
    const extra: Policy = {
      id: 'pol_extra',
      name: 'weird "name": *',
      description: 'line\nbreak',
      state: 'enabled',
      priority: 3,
      effect: 'allow',
      actions: ['*'],
      condition: "amount <= 50 && context.channel == 'chat'",
      rate_limit: { per_minute: 10 },
      budget: { unit: 'USD', limit: 12.5, period: 'daily', threshold_alert: 0.8 },
    };
    const doc = parse(policySetToYaml([...policies, extra])) as { policies: Policy[] };
    expect(doc.policies).toEqual([...policies, extra]);
  });
});

describe('peers agree with our semantics', () => {
  for (const seed of [1, 2, 3]) {
    it(`n = 50, seed ${seed}`, async () => {
      const { policies, requests } = generatePolicySet(50, seed);
      await checkSet(policies, requests);
    });
  }

  it('n = 200 with disabled policies (every wildcard kind present)', async () => {
    const { policies, requests } = generatePolicySet(200, 7, { disabledFraction: 0.1, requests: 500 });
    expect(policies.some((p) => p.state === 'disabled')).toBe(true);
    const expected = await checkSet(policies, requests);
    expect(expected).toContain('allow');
    expect(expected).toContain('deny');
  });

  it('hand-written edge cases', async () => {
    const P = (id: string, rest: Partial<Policy> & Pick<Policy, 'effect' | 'actions'>): Policy => ({
      id,
      name: id,
      state: 'enabled',
      priority: 100,
      ...rest,
    });
    const policies: Policy[] = [
      P('pol_a', {
        effect: 'allow',
        agents: ['a-1', 'team-*'],
        actions: ['docs.read', 'docs.list'],
        resources: ['doc:*', 'file:x'],
      }),
      P('pol_b', { effect: 'review', actions: ['mail.*', '*.send'] }),
      P('pol_c', { effect: 'deny', priority: 100, agents: ['a-2'], actions: ['mail.send'] }),
      P('pol_d', { effect: 'allow', priority: 100, agents: ['a-3'], actions: ['*'], resources: ['*'] }),
      P('pol_e', { effect: 'allow', state: 'disabled', agents: ['a-4'], actions: ['*'] }),
      P('pol_f', { effect: 'deny', priority: 50, agents: ['*'], actions: ['pay.*'], resources: ['acct:*:frozen'] }),
      P('pol_g', { effect: 'allow', priority: 100, actions: ['pay.transfer'], agents: ['a-*'] }),
      P('pol_h', { effect: 'allow', agents: ['quote"back\\slash*'], actions: ['x.y'] }),
    ];
    const requests: EvaluationInput[] = [
      { agent_id: 'a-1', action: 'docs.read', resource: 'doc:1' },
      { agent_id: 'a-1', action: 'docs.read' },
      { agent_id: 'a-1', action: 'docs.read', resource: 'file:x' },
      { agent_id: 'a-1', action: 'docs.read', resource: 'file:y' },
      { agent_id: 'team-9', action: 'docs.list', resource: 'doc:' },
      { agent_id: 'zz', action: 'mail.read' },
      { agent_id: 'zz', action: 'sms.send' },
      { agent_id: 'a-2', action: 'mail.send' },
      { agent_id: 'a-2', action: 'mail.read' },
      { agent_id: 'a-3', action: 'any.thing' },
      { agent_id: 'a-3', action: 'any.thing', resource: '' },
      { agent_id: 'a-4', action: 'any.thing' },
      { agent_id: 'a-5', action: 'pay.transfer', resource: 'acct:1:frozen' },
      { agent_id: 'a-5', action: 'pay.transfer', resource: 'acct:1:open' },
      { agent_id: 'quote"back\\slash-1', action: 'x.y' },
      { agent_id: 'quote"back\\slash-1', action: 'x.z' },
    ];
    expect(cedarAgreesWithPriorities(policies)).toBe(true);
    expect(await checkSet(policies, requests)).toEqual([
      'allow',
      'deny',
      'allow',
      'deny',
      'allow',
      'allow',
      'allow',
      'deny',
      'allow',
      'deny',
      'allow',
      'deny',
      'deny',
      'allow',
      'allow',
      'deny',
    ]);
    expect(policyToCedar(policies[4]!)).toBeNull();
  });

  it('documents where Cedar differs: an allow exception outranking a deny', async () => {
    const policies: Policy[] = [
      { id: 'pol_deny', name: 'deny', state: 'enabled', priority: 50, effect: 'deny', actions: ['pay.*'] },
      {
        id: 'pol_exc',
        name: 'exc',
        state: 'enabled',
        priority: 5,
        effect: 'allow',
        agents: ['boss'],
        actions: ['pay.transfer'],
      },
    ];
    const req: EvaluationInput = { agent_id: 'boss', action: 'pay.transfer' };
    expect(reference(policies, req)).toBe('allow');
    expect(cedarAgreesWithPriorities(policies)).toBe(false);
    const cedar = prepareCedar(policies);
    cedarPeers.push(cedar);
    expect(cedar.evaluate(req)).toBe('deny'); // forbid overrides permit
    expect((await prepareCasbin(policies)).evaluate(req)).toBe('allow'); // priority model: exact
    expect((await prepareCasbin(policies, { effect: 'deny-override' })).evaluate(req)).toBe('deny');
  });
});
