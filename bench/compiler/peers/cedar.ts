/**
 * Cedar as a benchmark peer: our policies translated to Cedar text, pre-parsed once
 * into cedar-wasm's thread-local cache (`preparsePolicySet`), then every decision is
 * a `statefulIsAuthorized` call naming that cached set (no re-parsing per call).
 *
 * Encoding (one Cedar policy per enabled policy, keyed by our policy id):
 * - effect: allow and review -> `permit`, deny -> `forbid`; disabled policies are
 *   left out.
 * - agents: one exact id -> scope `principal == Agent::"id"`; absent or a `*`-only
 *   glob -> unconstrained `principal`; anything else -> a `when` clause OR-ing
 *   `principal == Agent::"id"` (exact) and `context.agent like "team-4-*"` (glob;
 *   Cedar's `like` has the same `*` = any run of characters).
 * - actions: exact ones -> scope `action == Action::"ns.verb"` or
 *   `action in [Action::"a", Action::"b"]`; `*` -> unconstrained; `ns.*` / `*.verb`
 *   -> `context.action like "ns.*"` in the `when` clause (same set of valid
 *   `ns.verb` actions, since an action has exactly one dot).
 * - resources: absent -> unconstrained; otherwise
 *   `context has resource && (context.resource like "doc:1:*" || ...)`, so a
 *   request without a resource does not match (as ours). The request's resource
 *   uid is `Resource::"<resource>"` (or `NoResource::""`), but no policy constrains
 *   it: Cedar cannot glob an entity id, so globs go through the context.
 * - request: principal `Agent::"<agent_id>"`, action `Action::"<action>"`,
 *   context `{ agent, action, resource? }`, no entities (no hierarchy is used).
 *
 * Where Cedar differs from us: it has no priorities. Its answer is deny-overrides
 * (any matching forbid wins, else any matching permit allows, else deny), whereas
 * ours is "lowest priority number wins, deny first at equal priority". The two
 * agree whenever no allow/review policy outranks a deny policy that can match the
 * same request, e.g. when every deny has a priority number <= every allow's
 * (`cedarAgreesWithPriorities` checks that sufficient condition; the generated
 * bench sets satisfy it). An allow exception above a deny (priority 5 allow over
 * a priority 50 deny) would need the forbid rewritten with `unless` clauses; we do
 * not do that. Review is reported as allow. Conditions are not translated.
 */
import { preparsePolicySet, statefulIsAuthorized, type Context, type EntityUid } from '@cedar-policy/cedar-wasm/nodejs';
import type { EvaluationInput, Policy } from '../../../compiler/index.js';

export interface CedarPeer {
  evaluate(req: EvaluationInput): 'allow' | 'deny';
  /** Replaces the cached policy set with an empty one (cedar-wasm has no removal call). */
  dispose(): void;
  /** Translation to Cedar text plus pre-parsing, in milliseconds. */
  prepareMs: number;
}

let nextSetId = 0;

/** A Cedar string literal (entity ids, `like` patterns: our `*` stays Cedar's wildcard). */
function cedarString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c < 0x20 || c === 0x7f) out += `\\u{${c.toString(16)}}`;
    else out += ch;
  }
  return `${out}"`;
}

const isStarOnly = (glob: string) => /^\*+$/.test(glob);

/** One policy as Cedar text, or null when it never takes part (disabled). */
export function policyToCedar(policy: Policy): string | null {
  if (policy.state !== 'enabled') return null;
  const when: string[] = [];

  let principal = 'principal';
  if (policy.agents && !policy.agents.some(isStarOnly)) {
    const [only] = policy.agents;
    if (policy.agents.length === 1 && !only!.includes('*')) {
      principal = `principal == Agent::${cedarString(only!)}`;
    } else {
      const alts = policy.agents.map((g) =>
        g.includes('*') ? `context.agent like ${cedarString(g)}` : `principal == Agent::${cedarString(g)}`,
      );
      when.push(alts.length === 1 ? alts[0]! : `(${alts.join(' || ')})`);
    }
  }

  let action = 'action';
  if (!policy.actions.includes('*')) {
    const exact = policy.actions.filter((a) => !a.includes('*'));
    const patterns = policy.actions.filter((a) => a.includes('*'));
    if (patterns.length === 0) {
      action =
        exact.length === 1
          ? `action == Action::${cedarString(exact[0]!)}`
          : `action in [${exact.map((a) => `Action::${cedarString(a)}`).join(', ')}]`;
    } else {
      const alts = [
        ...exact.map((a) => `action == Action::${cedarString(a)}`),
        ...patterns.map((p) => `context.action like ${cedarString(p)}`),
      ];
      when.push(alts.length === 1 ? alts[0]! : `(${alts.join(' || ')})`);
    }
  }

  if (policy.resources) {
    const alts = policy.resources.map((g) => (isStarOnly(g) ? 'true' : `context.resource like ${cedarString(g)}`));
    when.push(`context has resource && ${alts.length === 1 ? alts[0]! : `(${alts.join(' || ')})`}`);
  }

  const effect = policy.effect === 'deny' ? 'forbid' : 'permit';
  const body = when.length > 0 ? ` when { ${when.join(' && ')} }` : '';
  return `${effect} (${principal}, ${action}, resource)${body};`;
}

/**
 * Whether Cedar's deny-overrides answer equals our priority answer for every
 * request: true when no enabled allow/review policy has a lower priority number
 * than an enabled deny policy (sufficient, not necessary: overlap is not checked).
 */
export function cedarAgreesWithPriorities(policies: readonly Policy[]): boolean {
  let maxDeny = -Infinity;
  let minAllow = Infinity;
  for (const p of policies) {
    if (p.state !== 'enabled') continue;
    if (p.effect === 'deny') maxDeny = Math.max(maxDeny, p.priority);
    else minAllow = Math.min(minAllow, p.priority);
  }
  return maxDeny <= minAllow;
}

export function prepareCedar(policies: readonly Policy[]): CedarPeer {
  const started = performance.now();
  const staticPolicies: Record<string, string> = {};
  for (const p of policies) {
    const text = policyToCedar(p);
    if (text !== null) staticPolicies[p.id] = text;
  }
  const setId = `agent-authz-bench-${nextSetId++}`;
  const parsed = preparsePolicySet(setId, { staticPolicies });
  if (parsed.type !== 'success') {
    throw new Error(`cedar: policy set does not parse: ${parsed.errors.map((e) => e.message).join('; ')}`);
  }
  const prepareMs = performance.now() - started;
  let disposed = false;

  const noResource: EntityUid = { type: 'NoResource', id: '' };
  return {
    prepareMs,
    evaluate(req: EvaluationInput): 'allow' | 'deny' {
      const hasResource = req.resource !== undefined && req.resource !== null;
      const context: Context = hasResource
        ? { agent: req.agent_id, action: req.action, resource: req.resource! }
        : { agent: req.agent_id, action: req.action };
      const answer = statefulIsAuthorized({
        principal: { type: 'Agent', id: req.agent_id },
        action: { type: 'Action', id: req.action },
        resource: hasResource ? { type: 'Resource', id: req.resource! } : noResource,
        context,
        preparsedPolicySetId: setId,
        entities: [],
      });
      if (answer.type !== 'success') {
        throw new Error(`cedar: authorization failed: ${answer.errors.map((e) => e.message).join('; ')}`);
      }
      const errors = answer.response.diagnostics.errors;
      if (errors.length > 0) {
        // A policy that errors is skipped by Cedar; ours never should.
        throw new Error(`cedar: policy ${errors[0]!.policyId} errored: ${errors[0]!.error.message}`);
      }
      return answer.response.decision;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      preparsePolicySet(setId, { staticPolicies: {} });
    },
  };
}
