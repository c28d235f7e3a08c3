/**
 * Deciding, reading and resolving decisions: the contract's evaluation order.
 * 1. validate (route schema + action format); 2. revoked agent -> deny
 * agent.revoked; 3. exhausted budget -> deny budget.exceeded; 4-6. the compiled
 * table (compiler/table/evaluate.ts); 7. limits and budgets of every matched
 * policy. The decision, its event and (first sight) the agent's registration are
 * stored together, batched with concurrent decisions, before the answer is sent.
 */
import { isValidAction, evaluate, type Policy } from '../../compiler/index.js';
import type { Principal } from '../tenant.js';
import type { Clock } from '../clock.js';
import {
  DecisionAlreadyConfirmedError,
  DecisionExpiredError,
  DecisionNotFoundError,
  DecisionNotPendingError,
  InvalidActionError,
} from '../errors/api-error.js';
import { newId } from '../ids.js';
import type { Sql } from '../store/connect.js';
import { findDecision, listDecisions, resolveDecision, type DecisionFilters, type DecisionRow } from '../store/decisions.js';
import type { Page, PageParams } from '../store/pagination.js';
import type { AgentDirectory } from './agent-directory.js';
import type { DecisionWriter } from './decision-writer.js';
import type { PolicySets } from './policy-sets.js';
import type { DecisionLimits, PermitIssuer } from './decision-ports.js';

export interface DecisionInput {
  agent_id: string;
  action: string;
  resource?: string;
  amount?: number;
  context?: Record<string, unknown>;
  ttl_seconds?: number;
}

export const DEFAULT_TTL_SECONDS = 300;

export interface DecisionDeps {
  sql: Sql;
  clock: Clock;
  policySets: PolicySets;
  agents: AgentDirectory;
  writer: DecisionWriter;
  limits: DecisionLimits;
  permits: PermitIssuer;
  /** Counts decisions for the security alerts (deny spikes, request volume). */
  alerts: { decision(accountId: string, environment: Principal['environment'], agentId: string, effect: string): void };
}

type Outcome = Pick<DecisionRow, 'effect' | 'reason' | 'policy_id' | 'matched_policy_ids' | 'warnings'>;

export class DecisionService {
  constructor(private readonly deps: DecisionDeps) {}

  async decide(principal: Principal, input: DecisionInput): Promise<DecisionRow> {
    if (input.action.length > 256 || !isValidAction(input.action)) {
      throw new InvalidActionError(`action "${input.action}" must be namespace.verb ([a-z][a-z0-9_]* each part, no wildcards), at most 256 characters`);
    }
    const { clock, agents, policySets, limits } = this.deps;
    const { accountId, environment } = principal;
    const nowMs = clock.now();
    const id = newId('dec', nowMs);
    const ttl = input.ttl_seconds ?? DEFAULT_TTL_SECONDS;
    const expiresAt = new Date(nowMs + ttl * 1000);
    const status = await agents.status(accountId, environment, input.agent_id);
    const set = await policySets.get(accountId, environment);
    const policy = (policyId: string) => set.table.byId.get(policyId)?.policy;
    let outcome: Outcome;
    let matched: readonly Policy[] = [];
    let blocked: { policy_id: string } | null;
    if (status === 'revoked') {
      outcome = deny('agent.revoked');
    } else if ((blocked = limits.exhausted(principal, input.agent_id, nowMs, policy))) {
      outcome = { ...deny('budget.exceeded'), policy_id: blocked.policy_id };
    } else {
      const evaluation = evaluate(set.table, {
        agent_id: input.agent_id,
        action: input.action,
        resource: input.resource ?? null,
        amount: input.amount ?? null,
        context: input.context ?? null,
      });
      outcome = {
        effect: evaluation.effect,
        reason: evaluation.reason,
        policy_id: evaluation.policy_id,
        matched_policy_ids: evaluation.matched.map((p) => p.id),
        warnings: evaluation.warnings,
      };
      if (evaluation.effect !== 'deny') matched = evaluation.matched;
    }
    // Step 7 (and the key's platform limit, for every decision): one store call.
    const verdict = await limits.apply({ principal, agentId: input.agent_id, amount: input.amount ?? null, matched, nowMs, decisionId: id, expiresAt });
    if (verdict && 'deny' in verdict) outcome = { ...outcome, effect: 'deny', reason: verdict.deny, policy_id: verdict.policy_id };
    else if (verdict) outcome = { ...outcome, warnings: [...outcome.warnings, ...verdict.warnings] };
    const row: DecisionRow = {
      account_id: accountId,
      environment,
      id,
      agent_id: input.agent_id,
      action: input.action,
      resource: input.resource ?? null,
      amount: input.amount ?? null,
      context: input.context ?? null,
      ...outcome,
      status: outcome.effect === 'deny' ? 'denied' : 'pending',
      evaluated_at: new Date(nowMs),
      expires_at: expiresAt,
      ttl_seconds: ttl,
      permit_token: null,
      resolved_at: null,
      confirmed_amount: null,
    };
    // The token is a bearer credential: it is answered once and stored nowhere (a
    // decisions:read key must not be able to obtain permits).
    const token = row.effect === 'deny' ? null : this.deps.permits.issue(row);
    await this.deps.writer.write({
      decision: row,
      ...(status === 'unknown' ? { newAgent: { account_id: accountId, environment, agent_id: input.agent_id, first_seen_at: row.evaluated_at } } : {}),
    });
    if (status === 'unknown') agents.set(accountId, environment, input.agent_id, 'active');
    this.deps.alerts.decision(accountId, environment, input.agent_id, row.effect);
    row.permit_token = token;
    return row;
  }

  async get(principal: Principal, id: string): Promise<DecisionRow> {
    const row = await findDecision(this.deps.sql, principal.accountId, principal.environment, id);
    if (!row) throw new DecisionNotFoundError(`no decision ${id}`);
    return row;
  }

  /** Newest first, narrowed by any of agent, effect and reason. */
  list(principal: Principal, page: PageParams, filters: DecisionFilters = {}): Promise<Page<DecisionRow>> {
    return listDecisions(this.deps.sql, principal.accountId, principal.environment, page, filters);
  }

  /** Confirm or reject (spec section 3): 404, then 409 already confirmed / not pending, 410 expired. */
  async resolve(principal: Principal, id: string, to: 'confirmed' | 'rejected', amount?: number): Promise<DecisionRow> {
    const { sql, clock, limits } = this.deps;
    const at = new Date(clock.now());
    const { accountId, environment } = principal;
    // The decision's status and its budget holds change together or not at all.
    const done = await sql.begin(async (tx) => {
      const row = await resolveDecision(tx, accountId, environment, id, to, at, to === 'confirmed' ? (amount ?? null) : null);
      return row && { row, usage: await limits.resolveHolds(tx, principal, id, to === 'confirmed', to === 'confirmed' ? (amount ?? null) : null) };
    });
    if (done) {
      limits.note(principal, done.usage);
      return done.row;
    }
    const row = await this.get(principal, id);
    if (row.status === 'confirmed' && to === 'confirmed') throw new DecisionAlreadyConfirmedError(`decision ${id} is already confirmed`);
    if (row.status === 'pending') throw new DecisionExpiredError(`decision ${id} expired at ${row.expires_at.toISOString()}; it can no longer be confirmed or rejected`);
    throw new DecisionNotPendingError(`decision ${id} is ${row.status}; only pending decisions can be ${to}`);
  }
}

function deny(reason: string): Outcome {
  return { effect: 'deny', reason, policy_id: null, matched_policy_ids: [], warnings: [] };
}
