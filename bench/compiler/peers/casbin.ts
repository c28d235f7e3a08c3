/**
 * Casbin as a benchmark peer: a model with a priority effect, policies loaded
 * through an in-memory adapter (the path `newEnforcer(model, adapter)` takes, which
 * sorts rules by priority), and `enforceSync` per decision.
 *
 * Encoding: one rule `p = priority, sub, obj, act, eft` per (agent glob x resource
 * glob x action pattern) of each enabled policy; review becomes `allow`; absent
 * agents become `*`; absent resources become `''` (a sentinel no real glob can be,
 * as globs are non-empty) meaning "any resource, including none". The request is
 * `(agent_id, resource | null, action)`.
 *
 * Matching: `authzGlob` (our glob rule, `*` = any run of characters) for agent ids
 * and actions (`ns.*`, `*.verb`, `*` as globs select the same valid `ns.verb`
 * actions as our action patterns, an action having exactly one dot), and
 * `authzResource` for resources (the sentinel matches everything, a null resource
 * matches nothing else). Both are registered with `addFunction` and implemented
 * here with cached RegExps, independently of our compiler's glob code, so a bug
 * there cannot hide in the comparison. Casbin's own `keyMatch` only handles a
 * trailing `*` and `globMatch` (picomatch) treats `/` and leading dots specially,
 * so neither has our semantics.
 *
 * Priority: `e = priority(p.eft) || deny` -- the first matching rule in priority
 * order decides, no match denies. Rules are handed over already sorted by
 * (priority, deny < review < allow, id), and Casbin's load-time sort by priority is
 * stable, so equal-priority ties go deny first, as ours: the answers are exactly
 * ours (allow/deny) for condition-free policies. `effect: 'deny-override'` instead
 * uses `some(where (p.eft == allow)) && !some(where (p.eft == deny))`, Cedar's
 * semantics (see cedar.ts for when that agrees with ours).
 */
import { createRequire } from 'node:module';
import type { Adapter, Model } from 'casbin';
import type { EvaluationInput, Policy } from '../../../compiler/index.js';

/**
 * The CommonJS build, on purpose: casbin's ESM build (what `import 'casbin'`
 * resolves to) is down-levelled by esbuild, so the `{ ...parameters, ...functions }`
 * that `enforce` builds for every rule becomes a per-property `__spreadValues`
 * loop; measured here that makes each decision about 2x slower than the CJS
 * build's native `Object.assign`. A peer should run at its best.
 */
const { newEnforcer, newModelFromString } = createRequire(import.meta.url)('casbin') as typeof import('casbin');

export interface CasbinPeer {
  evaluate(req: EvaluationInput): 'allow' | 'deny';
  /** Model, rules and enforcer construction (including Casbin's sort), in milliseconds. */
  prepareMs: number;
  /** Number of Casbin rules (policies expand to agent x resource x action rules). */
  rules: number;
}

export interface CasbinOptions {
  effect?: 'priority' | 'deny-override';
}

const EFFECT_RANK = { deny: 0, review: 1, allow: 2 } as const;

function modelText(effect: 'priority' | 'deny-override'): string {
  const priority = effect === 'priority';
  return [
    '[request_definition]',
    'r = sub, obj, act',
    '[policy_definition]',
    priority ? 'p = priority, sub, obj, act, eft' : 'p = sub, obj, act, eft',
    '[policy_effect]',
    priority ? 'e = priority(p.eft) || deny' : 'e = some(where (p.eft == allow)) && !some(where (p.eft == deny))',
    '[matchers]',
    'm = authzGlob(r.sub, p.sub) && authzGlob(r.act, p.act) && authzResource(r.obj, p.obj)',
    '',
  ].join('\n');
}

/** Glob matcher with a per-pattern cache: exact strings compare, others use an anchored RegExp. */
function makeGlobMatcher(): (subject: string, pattern: string) => boolean {
  const cache = new Map<string, RegExp | null>();
  return (subject, pattern) => {
    let re = cache.get(pattern);
    if (re === undefined) {
      re = pattern.includes('*')
        ? new RegExp(
            `^${pattern
              .split('*')
              .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
              .join('[\\s\\S]*')}$`,
          )
        : null;
      cache.set(pattern, re);
    }
    return re === null ? subject === pattern : re.test(subject);
  };
}

/** Feeds prepared rules to the model the way file/string adapters do (straight into the assertion). */
class MemoryAdapter implements Adapter {
  constructor(private readonly rules: string[][]) {}
  async loadPolicy(model: Model): Promise<void> {
    const assertion = model.model.get('p')?.get('p');
    if (!assertion) throw new Error('casbin: model has no p definition');
    for (const rule of this.rules) assertion.policy.push(rule);
  }
  async savePolicy(): Promise<boolean> {
    return false;
  }
  async addPolicy(): Promise<void> {}
  async removePolicy(): Promise<void> {}
  async removeFilteredPolicy(): Promise<void> {}
}

export async function prepareCasbin(policies: readonly Policy[], options: CasbinOptions = {}): Promise<CasbinPeer> {
  const effect = options.effect ?? 'priority';
  const started = performance.now();
  const enabled = policies.filter((p) => p.state === 'enabled');
  enabled.sort(
    (a, b) =>
      a.priority - b.priority ||
      EFFECT_RANK[a.effect] - EFFECT_RANK[b.effect] ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  const rules: string[][] = [];
  for (const p of enabled) {
    const eft = p.effect === 'deny' ? 'deny' : 'allow';
    for (const sub of p.agents ?? ['*']) {
      for (const obj of p.resources ?? ['']) {
        for (const act of p.actions) {
          rules.push(effect === 'priority' ? [String(p.priority), sub, obj, act, eft] : [sub, obj, act, eft]);
        }
      }
    }
  }
  const enforcer = await newEnforcer(newModelFromString(modelText(effect)), new MemoryAdapter(rules));
  const glob = makeGlobMatcher();
  await enforcer.addFunction('authzGlob', (subject: string, pattern: string) => glob(subject, pattern));
  await enforcer.addFunction('authzResource', (resource: string | null, pattern: string) =>
    pattern === '' ? true : resource !== null && glob(resource, pattern),
  );
  const prepareMs = performance.now() - started;
  return {
    prepareMs,
    rules: rules.length,
    evaluate(req: EvaluationInput): 'allow' | 'deny' {
      return enforcer.enforceSync(req.agent_id, req.resource ?? null, req.action) ? 'allow' : 'deny';
    },
  };
}
