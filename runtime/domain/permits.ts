/**
 * Online verification of permit tokens (POST /v1/permits/verify): the
 * signature against this service's keys, the tenant, the expiry (401 when any
 * fails; such a failure counts toward the `invalid_permit_tokens` security
 * alert), then whether what the permit stood on still holds: its decision not
 * rejected, its agent not revoked, the policy that allowed it still there and
 * enabled. A token that fails only those is 200 `valid: false` with a reason.
 * (Offline verification, the verifier library, checks the token by the same
 * rules but sees nothing of what happened since: a permit stays good there
 * until its `exp`.)
 */
import type { SecurityAlerts } from '../alerts/security-alerts.js';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors/api-error.js';
import type { KeyRing } from '../permits/key-ring.js';
import type { PermitClaims } from '../permits/sign.js';
import { verifyPermit } from '../permits/verify.js';
import { findAgent, type AgentRow } from '../store/agents.js';
import type { Sql } from '../store/connect.js';
import { findDecision, type DecisionRow } from '../store/decisions.js';
import type { Principal } from '../tenant.js';
import type { PolicySets } from './policy-sets.js';

/**
 * Why a well-signed, unexpired permit no longer stands (docs/permits.md):
 * - `decision.not_found`: its decision is not in the store;
 * - `decision.rejected`: its decision was rejected (`POST /v1/decisions/:id/reject`) or refused in review;
 * - `agent.revoked`: its agent is revoked now;
 * - `policy.not_found`: the policy that decided was deleted;
 * - `policy.disabled`: the policy that decided is disabled now.
 */
export const PERMIT_INVALID_REASONS = [
  'decision.not_found',
  'decision.rejected',
  'agent.revoked',
  'policy.not_found',
  'policy.disabled',
] as const;
export type PermitInvalidReason = (typeof PERMIT_INVALID_REASONS)[number];

export type PermitVerification =
  { valid: true; claims: PermitClaims } | { valid: false; reason: PermitInvalidReason; claims: PermitClaims };

export interface PermitServiceDeps {
  ring: KeyRing;
  clock: Clock;
  alerts: SecurityAlerts;
  baseUrl: string;
  sql: Sql;
  policySets: PolicySets;
}

export class PermitService {
  constructor(private readonly deps: PermitServiceDeps) {}

  /**
   * The token's claims and whether the permit still stands; 401 auth.expired /
   * auth.signature_invalid for a token that is not a valid permit at all.
   *
   * @example
   * const result = await permits.verify(principal, token);
   * if (!result.valid) console.log(result.reason); // e.g. 'agent.revoked'
   */
  async verify(p: Principal, token: string): Promise<PermitVerification> {
    const { ring, clock, alerts, baseUrl } = this.deps;
    let claims: PermitClaims;
    try {
      claims = await verifyPermit(token, ring, clock, p, baseUrl);
    } catch (error) {
      if (error instanceof ApiError) alerts.invalidPermitToken(p.accountId, p.environment);
      throw error;
    }
    const reason = await this.whyNotStanding(p, claims);
    return reason === null ? { valid: true, claims } : { valid: false, reason, claims };
  }

  /** Null while the permit's decision, agent and policy still hold; otherwise the first that does not. */
  private async whyNotStanding(p: Principal, claims: PermitClaims): Promise<PermitInvalidReason | null> {
    const { sql } = this.deps;
    const [decision, agent] = await Promise.all([
      findDecision(sql, p.accountId, p.environment, claims.dec),
      findAgent(sql, p.accountId, p.environment, claims.sub),
    ]);
    if (!decision) return 'decision.not_found';
    return whyDecisionNotStanding(
      this.deps,
      p,
      { status: decision.status, policy_id: decision.policy_id, agent_id: claims.sub },
      agent ?? null,
    );
  }
}

/**
 * Whether what a decision stood on still holds (the reasons above but
 * `decision.not_found`): null while it is not rejected or denied, its agent
 * not revoked, and the policy that decided still there and enabled; otherwise
 * the first that does not. Permit verification asks it, and so does an
 * AuthZEN re-evaluation before it applies an approval (domain/access-requests.ts).
 * `agent`: the agent's row when the caller read it already (null: none), else it is read.
 *
 * @example
 * const reason = await whyDecisionNotStanding({ sql, policySets }, principal, row); // e.g. 'agent.revoked'
 */
export async function whyDecisionNotStanding(
  deps: { sql: Sql; policySets: Pick<PolicySets, 'get'> },
  p: Principal,
  decision: Pick<DecisionRow, 'status' | 'policy_id' | 'agent_id'>,
  agent?: Pick<AgentRow, 'status'> | null,
): Promise<Exclude<PermitInvalidReason, 'decision.not_found'> | null> {
  if (decision.status === 'rejected' || decision.status === 'denied') return 'decision.rejected';
  const current =
    agent === undefined ? await findAgent(deps.sql, p.accountId, p.environment, decision.agent_id) : agent;
  if (current?.status === 'revoked') return 'agent.revoked';
  if (decision.policy_id !== null) {
    const set = await deps.policySets.get(p.accountId, p.environment);
    const policy = set.table.byId.get(decision.policy_id)?.policy;
    if (!policy) return 'policy.not_found';
    if (policy.state !== 'enabled') return 'policy.disabled';
  }
  return null;
}
