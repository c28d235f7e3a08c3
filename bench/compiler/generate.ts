/**
 * Deterministic benchmark policy sets: "sets of 10, 1k, 10k and 100k policies
 * (each for one agent and one action, plus wildcard ones)", with a request mix of
 * exact hits, wildcard hits and misses.
 *
 * Shape of a set of n policies:
 * - ~95% exact policies: one agent id (`agent-000123`, or `team-4-000129` for one
 *   pool agent in ten), one action (`ns12.read`); effect 85% allow, 10% deny,
 *   5% review; a quarter carry one resource glob (`doc:123:*`, sometimes an exact
 *   `doc:123:report`).
 * - ~5% wildcard policies, cycling through: team globs (`team-4-*` on `ns3.*`),
 *   deny guardrails for every agent on `nsX.*` + `secret:*`, agent-prefix globs
 *   (`agent-0001*`) on `*.read`, team deny guardrails (`team-2-*` on `*.delete`),
 *   and review of `*` for a range of ten agents (`agent-00012*`).
 *
 * Priorities are varied but banded so that every deny outranks (has a lower or
 * equal priority number than) every allow/review: guardrail denies 1-9, exact
 * denies 10-99, allow/review 100-999. Under that banding our rule (lowest priority
 * number wins, deny first at equal priority) gives the same allow/deny answer as
 * deny-overrides (Cedar's forbid-beats-permit), so the peers are compared on equal
 * terms. A set with an allow exception that outranks a deny would not have this
 * property; the generator never makes one.
 */
import type { EvaluationInput, Effect, Policy } from '../../compiler/index.js';

export interface GeneratedSet {
  policies: Policy[];
  requests: EvaluationInput[];
}

export interface GenerateOptions {
  /** Number of requests (default 1000). */
  requests?: number;
  /**
   * Fraction of exact policies generated with `state: 'disabled'` (default 0: the
   * bench sets are all enabled; tests raise it to exercise the state filter).
   */
  disabledFraction?: number;
}

export const NAMESPACES = 40;
export const VERBS = [
  'read',
  'write',
  'list',
  'create',
  'update',
  'delete',
  'send',
  'approve',
  'export',
  'run',
  'query',
  'sync',
] as const;
/** One pool agent in TEAM_EVERY is in a team (`team-<t>-<nnnnnn>`); the rest are `agent-<nnnnnn>`. */
const TEAM_EVERY = 10;

/** mulberry32: small, fast, good enough for test data; never Math.random. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pad6 = (i: number) => String(i).padStart(6, '0');

export function generatePolicySet(n: number, seed = 1, options: GenerateOptions = {}): GeneratedSet {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`n must be a positive integer, got ${n}`);
  const rand = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const chance = (p: number) => rand() < p;

  const requestCount = options.requests ?? 1000;
  const disabledFraction = options.disabledFraction ?? 0;

  // Agent pool: about 8 policies per agent, at least a handful of agents.
  const agentCount = Math.max(8, Math.round(n / 8));
  const teams = Math.max(2, Math.min(50, Math.round(agentCount / 100)));
  const agentId = (i: number) =>
    i % TEAM_EVERY === TEAM_EVERY - 1 ? `team-${i % teams}-${pad6(i)}` : `agent-${pad6(i)}`;
  const randomAction = () => `ns${int(0, NAMESPACES - 1)}.${pick(VERBS)}`;

  const wildcardCount = Math.max(1, Math.round(n * 0.05));
  const exactCount = n - wildcardCount;

  const policies: Policy[] = [];
  const exact: Policy[] = [];
  const wildcard: Policy[] = [];
  let seq = 0;
  const base = (priority: number, effect: Effect): Policy => {
    seq++;
    return { id: `pol_b${pad6(seq)}`, name: `bench-${pad6(seq)}`, state: 'enabled', priority, effect, actions: [] };
  };

  // Interleave wildcard policies among the exact ones so ids don't sort by kind.
  const wildcardEvery = Math.max(1, Math.floor(n / wildcardCount));
  let madeWildcards = 0;
  let madeExact = 0;
  for (let k = 0; k < n; k++) {
    const wantWildcard =
      madeWildcards < wildcardCount &&
      (k % wildcardEvery === wildcardEvery - 1 || n - k <= wildcardCount - madeWildcards);
    if (wantWildcard || madeExact >= exactCount) {
      const p = makeWildcard(madeWildcards++);
      wildcard.push(p);
      policies.push(p);
    } else {
      madeExact++;
      const r = rand();
      const effect: Effect = r < 0.85 ? 'allow' : r < 0.95 ? 'deny' : 'review';
      const p = base(effect === 'deny' ? int(10, 99) : int(100, 999), effect);
      const agentIndex = int(0, agentCount - 1);
      p.agents = [agentId(agentIndex)];
      p.actions = [randomAction()];
      if (chance(0.25)) p.resources = [chance(0.8) ? `doc:${agentIndex}:*` : `doc:${agentIndex}:report`];
      if (disabledFraction > 0 && chance(disabledFraction)) p.state = 'disabled';
      exact.push(p);
      policies.push(p);
    }
  }

  function makeWildcard(w: number): Policy {
    switch (w % 5) {
      case 0: {
        // A team may do everything in one namespace.
        const p = base(int(100, 499), 'allow');
        p.agents = [`team-${int(0, teams - 1)}-*`];
        p.actions = [`ns${int(0, NAMESPACES - 1)}.*`];
        return p;
      }
      case 1: {
        // Guardrail: nobody touches secrets in one namespace.
        const p = base(int(1, 9), 'deny');
        p.actions = [`ns${int(0, NAMESPACES - 1)}.*`];
        p.resources = ['secret:*'];
        return p;
      }
      case 2: {
        // A block of a hundred agents may read everywhere.
        const p = base(int(100, 499), 'allow');
        const block = int(0, Math.floor((agentCount - 1) / 100));
        p.agents = [`agent-${String(block).padStart(4, '0')}*`];
        p.actions = [`*.${pick(['read', 'list', 'query'] as const)}`];
        return p;
      }
      case 3: {
        // Guardrail: a team may not run one destructive verb anywhere.
        const p = base(int(1, 9), 'deny');
        p.agents = [`team-${int(0, teams - 1)}-*`];
        p.actions = [`*.${pick(['delete', 'export', 'approve'] as const)}`];
        return p;
      }
      default: {
        // Everything a range of ten agents does is reviewed.
        const p = base(int(100, 499), 'review');
        const block = int(0, Math.floor((agentCount - 1) / 10));
        p.agents = [`agent-${String(block).padStart(5, '0')}*`];
        p.actions = ['*'];
        return p;
      }
    }
  }

  // ---- requests -----------------------------------------------------------
  const fillGlob = (glob: string, filler: () => string) => glob.replace(/\*/g, () => filler());
  const fillAction = (pattern: string) => {
    if (pattern === '*') return randomAction();
    const [ns, verb] = pattern.split('.') as [string, string];
    return `${ns === '*' ? `ns${int(0, NAMESPACES - 1)}` : ns}.${verb === '*' ? pick(VERBS) : verb}`;
  };
  const resourceFor = (p: Policy, hit: boolean): string | null => {
    if (p.resources) {
      if (hit) return fillGlob(pick(p.resources), () => `file-${int(0, 999)}`);
      return chance(0.5) ? null : `doc:${int(0, agentCount)}:other-${int(0, 99)}`;
    }
    const r = rand();
    return r < 0.4 ? null : r < 0.9 ? `doc:${int(0, agentCount)}:file-${int(0, 999)}` : `secret:key-${int(0, 99)}`;
  };
  const agentFor = (p: Policy): string => {
    if (!p.agents) return agentId(int(0, agentCount - 1));
    const glob = pick(p.agents);
    if (!glob.includes('*')) return glob;
    // `agent-0001*` / `team-4-*`: complete the number to six digits.
    const m = /^(.*-)(\d*)\*$/.exec(glob);
    if (m) {
      const need = Math.max(1, 6 - m[2]!.length);
      return `${m[1]}${m[2]}${String(int(0, 10 ** need - 1)).padStart(need, '0')}`;
    }
    return fillGlob(glob, () => String(int(0, 9)));
  };

  const requests: EvaluationInput[] = [];
  for (let i = 0; i < requestCount; i++) {
    const r = rand();
    let req: EvaluationInput;
    if (r < 0.6 && exact.length > 0) {
      // Hit on an exact policy (its resource, when it has one, mostly matching).
      const p = pick(exact);
      req = { agent_id: p.agents![0]!, action: p.actions[0]!, resource: resourceFor(p, chance(0.8)) };
    } else if (r < 0.75 && wildcard.length > 0) {
      // Hit on a wildcard policy.
      const p = pick(wildcard);
      req = { agent_id: agentFor(p), action: fillAction(pick(p.actions)), resource: resourceFor(p, true) };
    } else if (r < 0.9) {
      // Known agent, random action: mostly a miss, sometimes a wildcard hit.
      req = {
        agent_id: agentId(int(0, agentCount - 1)),
        action: randomAction(),
        resource: chance(0.5) ? null : `doc:${int(0, agentCount)}:file-${int(0, 999)}`,
      };
    } else {
      // Unknown agent or unknown namespace: a miss unless a wildcard catches it.
      req = chance(0.5)
        ? { agent_id: `ghost-${pad6(int(0, 999999))}`, action: randomAction(), resource: null }
        : {
            agent_id: agentId(int(0, agentCount - 1)),
            action: `ns${NAMESPACES + int(0, 9)}.${pick(VERBS)}`,
            resource: null,
          };
    }
    if (req.resource === null) delete req.resource;
    requests.push(req);
  }

  return { policies, requests };
}

/**
 * The policies as one `policies:` YAML document, by string building (fast for
 * 100k). Every string is written as a JSON string, which is a valid YAML
 * double-quoted scalar (and keeps `*` from being read as an alias).
 */
export function policySetToYaml(policies: readonly Policy[]): string {
  const q = JSON.stringify;
  const list = (items: readonly string[]) => `[${items.map((s) => q(s)).join(', ')}]`;
  const map = (record: object) =>
    `{${Object.entries(record)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? q(v) : String(v)}`)
      .join(', ')}}`;
  const out: string[] = ['policies:'];
  for (const p of policies) {
    out.push(`  - id: ${q(p.id)}`);
    out.push(`    name: ${q(p.name)}`);
    if (p.description !== undefined) out.push(`    description: ${q(p.description)}`);
    out.push(`    state: ${p.state}`);
    out.push(`    priority: ${p.priority}`);
    out.push(`    effect: ${p.effect}`);
    if (p.agents) out.push(`    agents: ${list(p.agents)}`);
    out.push(`    actions: ${list(p.actions)}`);
    if (p.resources) out.push(`    resources: ${list(p.resources)}`);
    if (p.condition !== undefined) out.push(`    condition: ${q(p.condition)}`);
    if (p.rate_limit) out.push(`    rate_limit: ${map(p.rate_limit)}`);
    if (p.budget) out.push(`    budget: ${map(p.budget)}`);
  }
  out.push('');
  return out.join('\n');
}
