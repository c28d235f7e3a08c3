/**
 * Deciding, previewing, reading and resolving decisions: the evaluation
 * order (docs/policies.md#how-a-request-is-decided). 1. validate (route schema + action format); 2. revoked
 * agent -> deny agent.revoked; 3. exhausted budget -> deny budget.exceeded;
 * 4-6. the compiled table (the compiler's `evaluate`); 7. limits and budgets
 * of every matched policy. The decision, its event and (first sight) the
 * agent's registration are stored together, batched with concurrent
 * decisions, before the answer is sent. A preview runs the same steps and
 * uses nothing.
 */
import {
  actionPatternMatches,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  evaluate,
  isValidAction,
  matchGlob,
  type EvaluationInput,
  type Policy,
} from '../../compiler/index.js';
import type { DecisionRequest } from '../../clients/typescript/wire.js';
import type { Clock } from '../clock.js';
import {
  DecisionAlreadyConfirmedError,
  DecisionExpiredError,
  DecisionNotFoundError,
  DecisionNotPendingError,
  InvalidActionError,
  InvalidFieldError,
  ServiceUnavailableError,
} from '../errors/api-error.js';
import {
  checkedValues,
  gatedValues,
  historyGate,
  historyReadings,
  HistoryInput,
  ranges,
  type History,
} from '../history/history.js';
import { planHistory, type HistoryPlan } from '../history/plan.js';
import type { LeasedWrite } from '../history/leases.js';
import { confirmHistory } from '../store/history.js';
import { newId } from '../ids.js';
import { decisionEvent } from '../events/build.js';
import { decisionIdsBetween } from './decision-id-range.js';
import { checkAmountsAgree } from '../spend-limits/budget-keys.js';
import { isFiat } from '../spend-limits/limit-request.js';
import type { Sql } from '../store/connect.js';
import {
  exportDecisionPage,
  findDecision,
  listDecisions,
  resolveDecision,
  type DecisionFilters,
  type DecisionRow,
  type WarningRow,
  type ExportCursor,
} from '../store/decisions.js';
import { redactContext, type RedactionPath } from '../shared/redact.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { Page, PageParams } from '../store/pagination.js';
import type { Environment, Principal } from '../tenant.js';
import { NO_ATTRIBUTES, type AgentDirectory, type KnownStatus } from './agent-directory.js';
import type { ApprovalTimeouts, DecisionLimits, LimitVerdict, PermitIssuer } from './decision-ports.js';
import { isLive, isOverdue, type DecisionOutcome as Outcome, type DecisionPreview } from './decision-state.js';
import type { DecisionWriter, PendingWrite } from './decision-writer.js';
import type { CompiledSet, PolicySets } from './policy-sets.js';
import { newLabels, type SessionService } from './session-labels.js';

/** The body of `POST /v1/decisions` (and of the preview): the type generated from schemas/api/decision-request.schema.json. */
export type DecisionInput = DecisionRequest;

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
  alerts: { decision(accountId: string, environment: Environment, agentId: string, effect: string): void };
  /** Context paths never stored (AUTHZ_REDACT_CONTEXT). */
  redact?: readonly RedactionPath[];
  /** Counts a decision whose shadow outcome differs, by the shadow winner (metrics). */
  shadowDiverged?: (policyId: string | null) => void;
  /** AUTHZ_OTEL: a span per decision, its store calls as children. */
  tracing?: Tracing;
  /** Approvals that timed out, settled when read (absent: shown as stored). */
  approvals?: ApprovalTimeouts;
  /** Session labels: read for conditions, added by winning policies (absent: none). */
  sessions?: SessionService;
  /** History in conditions: the values read before evaluating (runtime/history/). */
  history: History;
  /** The decision log's retention (days; null: forever): no history entry is kept longer. */
  retentionDays?: number | null;
}

/** Evaluations of one decision at most, when other decisions keep changing the history it reads (then 503). */
const HISTORY_ATTEMPTS = 16;

/** What a decision's evaluation starts from (read once; evaluated again with other history values on a retry). */
interface Prepared {
  environment: Environment;
  set: CompiledSet;
  status: KnownStatus;
  /** The request as the table evaluates it (its `history` provider added per evaluation). */
  request: EvaluationInput;
  /** Decided before the table (revoked agent, exhausted budget), or null. */
  settled: Outcome | null;
  plan: HistoryPlan | null;
  /** The plan's values as read (empty without probes, and when `leased`: read from memory when evaluated). */
  values: number[];
  /** This process held the leases of every history key of the plan when it was prepared (runtime/history/leases.ts). */
  leased: boolean;
  /** The `history` provider of `request` (null: no probe), given each evaluation's values. */
  historyInput: HistoryInput | null;
  /** The session's labels (null: no candidate policy reads or adds labels). */
  sessionLabels: string[] | null;
  /** They are this process's remembered ones (re-checked by the gate), not read now. */
  labelsGuessed: boolean;
}

/** Rows read per page of an export. */
const EXPORT_PAGE = 1000;

/** Steps 2-6 of the evaluation order, and the policies whose limits step 7 applies. */
interface Evaluated {
  outcome: Outcome;
  matched: readonly Policy[];
  status: KnownStatus;
  /** The winning review policy asks for approval: within this many seconds. */
  approvalSeconds: number | null;
  /** The session's labels it was decided with (null: none of its candidate policies reads or adds labels). */
  sessionLabels: string[] | null;
  /** The winning policy's labels (added to the session once the decision is allowed). */
  adds: readonly string[];
}

/** Whether two evaluations decide alike (a history value's range keeps this unchanged). */
function sameness(e: Evaluated): string {
  const o = e.outcome;
  return JSON.stringify([
    o.effect,
    o.reason,
    o.policy_id,
    o.matched_policy_ids,
    o.warnings,
    o.shadow ?? null,
    e.approvalSeconds,
  ]);
}

export class DecisionService {
  constructor(private readonly deps: DecisionDeps) {}

  async decide(principal: Principal, input: DecisionInput): Promise<DecisionRow> {
    checkAction(input.action);
    const tracing = this.deps.tracing;
    if (!tracing?.enabled) return this.decideIn(principal, input, null);
    return tracing.inSpan('decision', async (span) => {
      span.setAttributes({ 'authz.agent_id': input.agent_id, 'authz.action': input.action });
      const row = await this.decideIn(principal, input, tracing);
      span.setAttributes({
        'authz.decision_id': row.id,
        'authz.effect': row.effect,
        'authz.reason': row.reason,
        'authz.policy_id': row.policy_id ?? undefined,
      });
      return row;
    });
  }

  /** `traced`: the tracing whose child spans wrap the store calls, or null (tracing off). */
  private async decideIn(principal: Principal, input: DecisionInput, traced: Tracing | null): Promise<DecisionRow> {
    const inStore = traced
      ? <T>(name: string, call: () => Promise<T>): Promise<T> => traced.inSpan(name, call)
      : untraced;
    const { clock, agents, limits } = this.deps;
    const { accountId, environment } = principal;
    const nowMs = clock.now();
    const id = newId('dec', nowMs);
    const ttl = input.ttl_seconds ?? DEFAULT_TTL_SECONDS;
    const expiresAt = new Date(nowMs + ttl * 1000);
    const prepared = await this.prepare(principal, input, nowMs, true);
    const { status, plan } = prepared;
    let values = prepared.values;
    let evaluated!: Evaluated;
    let verdict!: LimitVerdict;
    let approvalExpiresAt!: Date | null;
    let stored: DecisionRow | null = null;
    const build = (e: Evaluated, outcome: Outcome, approvalUntil: Date | null, vals: readonly number[]) =>
      this.row(principal, input, {
        id,
        nowMs,
        ttl,
        expiresAt,
        approvalExpiresAt: approvalUntil,
        outcome,
        plan,
        values: vals,
        sessionLabels: e.sessionLabels,
      });
    // History under leases this process holds (runtime/history/leases.ts): decided from memory and
    // written with its entry, without the limits gate; null when the gate decides it.
    const leased =
      plan && prepared.leased ? await this.decideLeased(principal, input, prepared, id, nowMs, build) : null;
    if (leased?.stored) {
      ({ evaluated, values, approvalExpiresAt } = leased);
      verdict = leased.verdict;
      stored = leased.stored;
    } else if (plan) {
      // The gate ends the leases of the keys it decides: this process's memory of them is dropped.
      this.deps.history.leases?.yieldTo(plan);
      if (leased && plan.probes.length > 0) values = await this.deps.history.read(principal, plan, nowMs, true);
    }
    if (!stored)
      // Optimistic history (runtime/history/history.ts): evaluated with the values read, judged again
      // by the gate under the scope keys' locks; other values there: evaluated again with them.
      for (let attempt = 0, admitted = leased !== null && leased.stored === null && leased.admitted; ; attempt++) {
        evaluated = this.judge(prepared, values);
        // Approval before the action: the decision (and its holds) last until the approval deadline.
        approvalExpiresAt =
          evaluated.approvalSeconds === null ? null : new Date(nowMs + evaluated.approvalSeconds * 1000);
        const holdUntil = approvalExpiresAt ?? expiresAt;
        const gate =
          plan &&
          historyGate(
            plan,
            nowMs,
            this.historyRanges(prepared, values, evaluated, attempt === 0),
            entryKind(evaluated.outcome),
          );
        // The decision as it stands if its limits change nothing: stored with them, one round trip
        // (built only when the limits go to the store).
        let candidate: DecisionRow | null = null;
        const [e, until, vals] = [evaluated, approvalExpiresAt, values];
        const write = () => {
          candidate = this.speculative(status, build(e, e.outcome, until, vals), e);
          return (
            candidate && {
              decision: candidate,
              event: decisionEvent(candidate),
              history: plan ? checkedValues(plan, vals) : [],
            }
          );
        };
        const labels =
          prepared.labelsGuessed && input.session_id
            ? this.deps.sessions!.check(input.session_id, prepared.sessionLabels ?? [])
            : null;
        // Step 7 (and the key's platform limit, for every decision): one store call.
        const applied = await inStore('store.limits', () =>
          limits.apply({
            ...limitSubject(principal, input, evaluated.matched, nowMs),
            decisionId: id,
            expiresAt: holdUntil,
            ...(approvalExpiresAt ? { deferCalls: true } : {}),
            ...(gate ? { history: gate } : {}),
            ...(admitted ? { ratesAdmitted: true } : {}),
            ...(labels ? { labels } : {}),
            write,
          }),
        );
        if ('staleLabels' in applied) {
          // Another process (or the API, or the gateway) changed the session's labels: evaluate with them (nothing moved).
          Object.assign(prepared, { sessionLabels: applied.staleLabels, labelsGuessed: false });
          prepared.request.session_labels = applied.staleLabels;
          if (attempt + 1 >= HISTORY_ATTEMPTS)
            throw new ServiceUnavailableError(
              'the session labels this decision reads kept changing while it was decided; retry',
            );
          continue;
        }
        admitted = true;
        if (!('stale' in applied)) {
          verdict = applied.verdict;
          if (plan && applied.history) values = gatedValues(plan, applied.history);
          if (applied.written) stored = candidate;
          break;
        }
        values = gatedValues(plan!, applied.stale);
        if (attempt + 1 >= HISTORY_ATTEMPTS)
          throw new ServiceUnavailableError(
            'the history this decision reads kept changing while it was decided; retry',
          );
      }
    let outcome = evaluated.outcome;
    if (verdict && 'deny' in verdict)
      outcome = { ...outcome, effect: 'deny', reason: verdict.deny, policy_id: verdict.policy_id };
    else if (verdict) outcome = { ...outcome, warnings: [...outcome.warnings, ...verdict.warnings] };
    if (plan && plan.probes.length > 0 && !leased?.stored)
      this.deps.history.learn(principal, plan, values, entryKind(outcome));
    const awaiting = approvalExpiresAt !== null && outcome.effect === 'review';
    let row = stored ?? build(evaluated, outcome, approvalExpiresAt, values);
    // The token is a bearer credential: it is answered once and stored nowhere (a
    // decisions:read key must not be able to obtain permits). A decision awaiting
    // approval has none until it is approved (POST /v1/decisions/:id/permit).
    // Signed meanwhile when another thread signs it (AUTHZ_SIGN_WORKER=1): awaited after the write.
    let token = row.effect === 'deny' || awaiting ? null : this.deps.permits.issue(row);
    if (!stored) {
      const pending = this.pendingWrite(principal, input, status, row, evaluated, null);
      const written = await inStore('store.write', () => this.deps.writer.write(pending));
      // Its labels would have taken a full session past 256 (another decision filled it meanwhile): stored denied.
      if (written.decision !== row) [row, token] = [written.decision, null];
    }
    // The labels the session holds after it (allowed now: with its policy's), the next decision's guess.
    this.deps.sessions?.written(
      row,
      evaluated.sessionLabels &&
        (row.effect === 'deny' || awaiting
          ? evaluated.sessionLabels
          : [...evaluated.sessionLabels, ...newLabels(evaluated.sessionLabels, evaluated.adds)]),
    );
    if (status === 'unknown') agents.setStatus(accountId, environment, input.agent_id, 'active', NO_ATTRIBUTES);
    this.deps.alerts.decision(accountId, environment, input.agent_id, row.effect);
    if (row.shadow) this.deps.shadowDiverged?.(row.shadow.policy_id);
    row.permit_token = token instanceof Promise ? await token : token;
    return row;
  }

  /**
   * A decision whose history keys this process holds the leases of
   * (runtime/history/leases.ts): its values read from memory, evaluated and its
   * entry recorded in one synchronous step, then stored with the entry in one
   * statement (the leases' epochs checked). Not for a decision whose limits,
   * budgets or session labels the gate must judge: those, a lease lost on the
   * way, and a write whose lease ended answer `stored: null` and go through the
   * gate (`admitted`: the key's platform limit counted it already), which the
   * caller yields the keys to.
   */
  private async decideLeased(
    principal: Principal,
    input: DecisionInput,
    prepared: Prepared,
    id: string,
    nowMs: number,
    build: (e: Evaluated, outcome: Outcome, approvalUntil: Date | null, vals: readonly number[]) => DecisionRow,
  ): Promise<
    | {
        stored: DecisionRow;
        evaluated: Evaluated;
        values: number[];
        approvalExpiresAt: Date | null;
        verdict: LimitVerdict;
      }
    | { stored: null; admitted: boolean }
  > {
    const { limits, history } = this.deps;
    const leases = history.leases!;
    const plan = prepared.plan!;
    const gated = (e: Evaluated) =>
      prepared.sessionLabels !== null || limits.judgesInStore(e.matched, input.agent_id, nowMs);
    const fromMemory = (before: { values: number[]; evaluated: Evaluated; stamp: number } | null) => {
      const stamp = leases.stamp(plan);
      if (stamp === null) return null;
      // Nothing recorded or dropped under its keys since: the same values (no second read).
      if (before && stamp === before.stamp) return before;
      const values = leases.values(plan, nowMs)!;
      if (before && values.every((v, i) => v === before.values[i])) return before;
      return { values, evaluated: this.judge(prepared, values), stamp };
    };
    let first = fromMemory(null);
    if (first === null || gated(first.evaluated)) return { stored: null, admitted: false };
    const approvalUntil = (e: Evaluated) =>
      e.approvalSeconds === null ? null : new Date(nowMs + e.approvalSeconds * 1000);
    const expiresAt = new Date(nowMs + (input.ttl_seconds ?? DEFAULT_TTL_SECONDS) * 1000);
    // The key's platform limit (a store call only when this process holds none of its tokens).
    const applied = await limits.apply({
      ...limitSubject(principal, input, first.evaluated.matched, nowMs),
      decisionId: id,
      expiresAt: approvalUntil(first.evaluated) ?? expiresAt,
      ...(first.evaluated.approvalSeconds !== null ? { deferCalls: true } : {}),
    });
    if (!('verdict' in applied)) return { stored: null, admitted: true };
    // From here to the write's submission, synchronous: no other decision reads the memory in between.
    const now = fromMemory(first);
    if (
      now === null ||
      (now !== first && (gated(now.evaluated) || sameness(now.evaluated) !== sameness(first.evaluated)))
    )
      return { stored: null, admitted: true };
    first = now;
    const { evaluated, values } = first;
    const approvalExpiresAt = approvalUntil(evaluated);
    const leasedWrite = leases.record(plan, principal, id, entryKind(evaluated.outcome));
    const row = build(evaluated, evaluated.outcome, approvalExpiresAt, values);
    const written = await this.deps.writer.write(
      this.pendingWrite(principal, input, prepared.status, row, evaluated, leasedWrite),
    );
    if (written.leaseEnded) return { stored: null, admitted: true };
    return { stored: written.decision, evaluated, values, approvalExpiresAt, verdict: applied.verdict };
  }

  /** The decision row of an evaluation, as stored (its context without the redacted paths). */
  private row(
    principal: Principal,
    input: DecisionInput,
    d: {
      id: string;
      nowMs: number;
      ttl: number;
      expiresAt: Date;
      approvalExpiresAt: Date | null;
      outcome: Outcome;
      plan: HistoryPlan | null;
      values: readonly number[];
      sessionLabels: string[] | null;
    },
  ): DecisionRow {
    const { outcome } = d;
    const awaiting = d.approvalExpiresAt !== null && outcome.effect === 'review';
    return {
      account_id: principal.accountId,
      environment: principal.environment,
      id: d.id,
      agent_id: input.agent_id,
      action: input.action,
      resource: input.resource ?? null,
      amount: input.amount ?? null,
      // Evaluated whole, stored without the redacted paths.
      context: redactContext(input.context ?? null, this.deps.redact ?? []),
      ...outcome,
      status: outcome.effect === 'deny' ? 'denied' : awaiting ? 'awaiting_approval' : 'pending',
      evaluated_at: new Date(d.nowMs),
      expires_at: awaiting ? d.approvalExpiresAt! : d.expiresAt,
      ttl_seconds: d.ttl,
      permit_token: null,
      resolved_at: null,
      confirmed_amount: null,
      session_id: input.session_id ?? null,
      on_behalf_of: input.on_behalf_of ?? null,
      args_digest: input.args_digest ?? null,
      key_id: principal.keyId,
      shadow: outcome.shadow ?? null,
      review_status: outcome.effect === 'review' ? 'open' : null,
      reviewer: null,
      review_note: null,
      reviewed_at: null,
      reviewer_key_id: null,
      approval_expires_at: awaiting ? d.approvalExpiresAt : null,
      history: historyReadings(d.plan, d.values),
      session_labels: d.sessionLabels,
    };
  }

  /** What the decision writes to its session: the winning policy's labels the session lacks, when allowed now; or its opening. */
  /**
   * A decision's write: with its agent's registration when the agent is new, the
   * session work of its policy's labels (allowed now; a review awaiting
   * approval: on approval, domain/approvals.ts), and its history entry when
   * decided from leases.
   */
  private pendingWrite(
    principal: Principal,
    input: DecisionInput,
    status: KnownStatus,
    row: DecisionRow,
    evaluated: Evaluated,
    history: LeasedWrite | null,
  ): PendingWrite {
    const session = this.sessionWrite(row, evaluated, row.status === 'awaiting_approval');
    return {
      decision: row,
      ...(status === 'unknown'
        ? {
            newAgent: {
              account_id: principal.accountId,
              environment: principal.environment,
              agent_id: input.agent_id,
              first_seen_at: row.evaluated_at,
            },
          }
        : {}),
      ...(session ? { session } : {}),
      ...(history ? { history } : {}),
    };
  }

  private sessionWrite(row: DecisionRow, evaluated: Evaluated, awaiting: boolean) {
    const adds = row.effect === 'deny' || awaiting ? [] : newLabels(evaluated.sessionLabels ?? [], evaluated.adds);
    return this.deps.sessions?.forWrite(row, adds) ?? null;
  }

  /**
   * The row to store with the decision's limits (one round trip), or null when
   * it must be written on its own: an agent seen for the first time (its
   * registration), session work (labels or the session's opening).
   */
  private speculative(status: KnownStatus, row: DecisionRow, evaluated: Evaluated): DecisionRow | null {
    if (status === 'unknown') return null;
    const awaiting = row.status === 'awaiting_approval';
    return this.sessionWrite(row, evaluated, awaiting) === null ? row : null;
  }

  /**
   * What a decision would be now, counting the current limits and budgets
   * without using them: stores, holds, signs and fires nothing, and registers
   * no agent.
   */
  async preview(principal: Principal, input: DecisionInput): Promise<DecisionPreview> {
    checkAction(input.action);
    const nowMs = this.deps.clock.now();
    const prepared = await this.prepare(principal, input, nowMs, false);
    const { outcome: judged, matched, approvalSeconds } = this.judge(prepared, prepared.values);
    const readings = historyReadings(prepared.plan, prepared.values);
    const evaluated: Outcome = readings ? { ...judged, history: readings } : judged;
    const outcome: DecisionPreview =
      approvalSeconds !== null && evaluated.effect === 'review' ? { ...evaluated, approval_required: true } : evaluated;
    const verdict = await this.deps.limits.preview(limitSubject(principal, input, matched, nowMs));
    if (verdict === null) return outcome;
    if ('rate_limited' in verdict)
      return { ...evaluated, effect: 'deny', reason: 'rate_limit.exceeded', retry_after_seconds: verdict.rate_limited };
    if ('deny' in verdict) return { ...evaluated, effect: 'deny', reason: verdict.deny, policy_id: verdict.policy_id };
    return { ...outcome, warnings: [...outcome.warnings, ...verdict.warnings] };
  }

  /**
   * For each action, whether this agent could ever be allowed it: false when
   * the agent is revoked or no enabled allow or review policy matches the agent
   * and the action (resources, conditions, limits and deny policies aside).
   * Says yes or no, never which policy.
   */
  async possible(
    principal: Principal,
    agentId: string,
    actions: readonly string[],
  ): Promise<Array<{ action: string; possible: boolean }>> {
    actions.forEach((action, i) => checkAction(action, `/actions/${i}`));
    const { agents, policySets } = this.deps;
    if ((await agents.status(principal.accountId, principal.environment, agentId)) === 'revoked')
      return actions.map((action) => ({ action, possible: false }));
    const set = await policySets.get(principal.accountId, principal.environment);
    const grants = set.policies.filter(
      (p) =>
        p.state === 'enabled' &&
        p.effect !== 'deny' &&
        (p.agents === undefined || p.agents.some((g) => matchGlob(g, agentId))),
    );
    return actions.map((action) => ({
      action,
      possible: grants.some((p) => p.actions.some((pattern) => actionPatternMatches(pattern, action))),
    }));
  }

  /**
   * The permits of a replayed answer (an Idempotency-Key repeated, on POST
   * /v1/decisions or the AuthZEN evaluations): the key's platform limit
   * admitted (a replay counts as a request, however many decisions it names),
   * then each decision re-read as it is now (an approval whose time is up
   * denied first) and its permit signed afresh, in the order of `ids` (null for
   * a deny). A permit is a bearer credential stored nowhere, so a replay cannot
   * answer the first one.
   *
   * @example
   * const [token] = await decisions.replayPermits(principal, ['dec_...']);
   */
  async replayPermits(principal: Principal, ids: readonly string[]): Promise<Array<string | null>> {
    await this.deps.limits.admitKey(principal);
    const tokens: Array<string | null> = [];
    for (const id of ids) tokens.push(await this.deps.permits.issue(await this.get(principal, id)));
    return tokens;
  }

  /** The decision as it is now: an approval whose time is up is denied (review.timeout) before it is answered. */
  async get(principal: Principal, id: string): Promise<DecisionRow> {
    const row = await findDecision(this.deps.sql, principal.accountId, principal.environment, id);
    if (!row) throw new DecisionNotFoundError(`no decision ${id}`);
    if (this.deps.approvals && isOverdue(row, this.deps.clock.now()))
      return (await this.deps.approvals.timeOut(principal, id)) ?? this.get(principal, id);
    return row;
  }

  /**
   * Every decision with `since <= evaluated_at < until`, oldest first, read a
   * page at a time (constant memory however many): for GET /v1/decisions/export
   * (approvals whose time is up denied first).
   */
  async *export(principal: Principal, range: { since: Date; until: Date }): AsyncGenerator<DecisionRow> {
    // Approvals whose time is up read as denied here too.
    await this.deps.approvals?.timeOutOverdue(principal);
    let cursor: ExportCursor | null = null;
    for (;;) {
      // Said by id range too: only the partitions of the remaining days are read.
      const ids = await decisionIdsBetween(
        this.deps.sql,
        (cursor?.evaluatedAt ?? range.since).getTime(),
        range.until.getTime(),
      );
      const page = await exportDecisionPage(
        this.deps.sql,
        principal.accountId,
        principal.environment,
        range,
        cursor,
        EXPORT_PAGE,
        ids,
      );
      for (const { seq: _seq, ...row } of page) yield row;
      if (page.length < EXPORT_PAGE) return;
      const last = page[page.length - 1]!;
      cursor = { evaluatedAt: last.evaluated_at, seq: last.seq };
    }
  }

  /** Newest first, narrowed by any of agent, session, user, effect and reason (approvals whose time is up denied first). */
  async list(principal: Principal, page: PageParams, filters: DecisionFilters = {}): Promise<Page<DecisionRow>> {
    await this.deps.approvals?.timeOutOverdue(principal);
    return listDecisions(this.deps.sql, principal.accountId, principal.environment, page, filters);
  }

  /**
   * Confirm or reject (docs/api.md#post-v1decisionsidconfirm-and-reject): 404, then 409 already confirmed / not
   * pending, 410 expired. A confirm's `amount` is for a decision that had one
   * or held one unit (400 otherwise); `amounts` confirms per held unit; without
   * either, the amount decided (held) is the amount confirmed.
   */
  async resolve(
    principal: Principal,
    id: string,
    to: 'confirmed' | 'rejected',
    amount?: number,
    amounts?: Record<string, number>,
  ): Promise<DecisionRow> {
    const { sql, clock, limits } = this.deps;
    const at = new Date(clock.now());
    const { accountId, environment } = principal;
    // The decision's status and its budget holds change together or not at all.
    const done = await sql.begin(async (tx) => {
      const current = await findDecision(tx, accountId, environment, id);
      const resolvable = current !== undefined && isLive(current, at.getTime());
      const confirmed = to === 'confirmed' ? (amount ?? current?.amount ?? null) : null;
      const row = await resolveDecision(tx, accountId, environment, id, to, at, confirmed);
      const confirming = to === 'confirmed';
      // history.sum adds the confirmed amount from now on.
      if (row && confirming) await confirmHistory(tx, accountId, environment, id, row.confirmed_amount);
      const usage =
        row &&
        (await limits.resolveHolds(
          tx,
          principal,
          id,
          confirming,
          confirming ? (amount ?? null) : null,
          confirming ? (amounts ?? null) : null,
        ));
      // An amount confirms what was held: a decision without an amount and without holds has none to confirm.
      if (
        resolvable &&
        confirming &&
        (amount !== undefined || amounts !== undefined) &&
        current.amount === null &&
        usage !== undefined &&
        usage !== null &&
        !usage.some((u) => u.unit !== 'calls')
      ) {
        const message = `decision ${id} was made without an amount; confirm it without one`;
        throw new InvalidFieldError(message, {
          details: [{ path: amount !== undefined ? '/amount' : '/amounts', message }],
        });
      }
      // Both given: they must agree for the one held unit (thrown here, the transaction undoes the holds' change).
      if (usage && confirming && amount !== undefined && amounts !== undefined) {
        checkAmountsAgree({ amount, amounts }, [...new Set(usage.filter((u) => isFiat(u.unit)).map((u) => u.unit))]);
      }
      return row && { row, usage: usage! };
    });
    if (done) {
      limits.note(principal, done.usage);
      return done.row;
    }
    const row = await this.get(principal, id);
    if (row.status === 'confirmed' && to === 'confirmed')
      throw new DecisionAlreadyConfirmedError(`decision ${id} is already confirmed`);
    if (row.status === 'pending')
      throw new DecisionExpiredError(
        `decision ${id} expired at ${row.expires_at.toISOString()}; it can no longer be confirmed or rejected`,
      );
    throw new DecisionNotPendingError(`decision ${id} is ${row.status}; only pending decisions can be ${to}`);
  }

  /**
   * What steps 2-6 start from: the agent's status, the policy set, and the
   * history the candidate policies read (one store call, only when one reads
   * history; a session or user probe without its field: 400).
   */
  private async prepare(principal: Principal, input: DecisionInput, nowMs: number, guess: boolean): Promise<Prepared> {
    const { agents, policySets, limits } = this.deps;
    // From memory for an agent seen within the last 2 s: no store round trip.
    const known = agents.lookup(principal.accountId, principal.environment, input.agent_id);
    const { status, attributes } = known instanceof Promise ? await known : known;
    const set = await policySets.get(principal.accountId, principal.environment);
    const policy = (policyId: string) => set.table.byId.get(policyId)?.policy;
    const request: EvaluationInput = {
      agent_id: input.agent_id,
      action: input.action,
      resource: input.resource ?? null,
      amount: input.amount ?? null,
      session_id: input.session_id ?? null,
      on_behalf_of: input.on_behalf_of ?? null,
      context: input.context ?? null,
      agent_attributes: attributes,
    };
    let settled: Outcome | null = null;
    let blocked: { policy_id: string } | null;
    if (status === 'revoked') settled = deny('agent.revoked');
    else if (
      (blocked = limits.exhausted(
        principal,
        { agentId: input.agent_id, sessionId: request.session_id ?? null, onBehalfOf: request.on_behalf_of ?? null },
        nowMs,
        policy,
      ))
    ) {
      settled = { ...deny('budget.exceeded'), policy_id: blocked.policy_id };
    }
    const subject = {
      agentId: input.agent_id,
      sessionId: input.session_id ?? null,
      onBehalfOf: input.on_behalf_of ?? null,
      action: input.action,
      resource: input.resource ?? null,
      amount: input.amount ?? null,
      context: input.context ?? null,
    };
    const plan = planHistory(set.table, request, subject, principal, {
      reads: settled === null,
      retentionDays: this.deps.retentionDays ?? null,
      nowMs,
    });
    // The session's labels, read only when a candidate policy reads or adds them (domain/session-labels.ts).
    // A decision may start from the labels remembered (its gate re-checks them); a preview reads.
    const found =
      settled === null ? ((await this.deps.sessions?.forDecision(principal, set.table, input, guess)) ?? null) : null;
    // A decision under history leases this process holds (taken now when it can) reads their memory
    // when it is evaluated (decideLeased); not one whose labels the gate judges. Else it starts from a
    // remembered guess (its gate judges it); a preview reads.
    const leases = this.deps.history.leases;
    let leased = false;
    if (guess && plan !== null && leases !== null && found === null) {
      const held = leases.hold(plan, nowMs);
      leased = typeof held === 'boolean' ? held : await held;
    }
    // Not under leases now but every key still held (a decision whose labels the gate judges): the memory's
    // values are the gate's first guess, exact unless another process moved them.
    const values =
      plan && plan.probes.length > 0 && !leased
        ? ((guess ? leases?.values(plan, nowMs) : null) ??
          (await this.deps.history.read(principal, plan, nowMs, guess)))
        : [];
    if (found !== null) request.session_labels = found.labels;
    const historyInput = plan && plan.probes.length > 0 ? new HistoryInput(plan) : null;
    if (historyInput) request.history = historyInput.provider;
    return {
      environment: principal.environment,
      set,
      status,
      request,
      settled,
      plan,
      values,
      leased,
      historyInput,
      sessionLabels: found?.labels ?? null,
      labelsGuessed: found?.guessed ?? false,
    };
  }

  /** Steps 2-6 with these history values: revoked agent, exhausted budget, the compiled table. Synchronous. */
  private judge(prepared: Prepared, values: readonly number[]): Evaluated {
    const { set, status, settled } = prepared;
    if (settled) return { outcome: settled, matched: [], status, approvalSeconds: null, sessionLabels: null, adds: [] };
    prepared.historyInput?.use(values);
    const evaluation = evaluate(set.table, prepared.request);
    const outcome: Outcome = {
      effect: evaluation.effect,
      reason: evaluation.reason,
      policy_id: evaluation.policy_id,
      matched_policy_ids: evaluation.matched.map((p) => p.id),
      warnings: set.table.byId.size === 0 ? [noPolicies(prepared.environment)] : (evaluation.warnings as WarningRow[]),
      // Shadow policies: the table's outcome with them enabled, when it differs.
      ...(evaluation.shadow ? { shadow: evaluation.shadow } : {}),
    };
    const { sessionLabels } = prepared;
    const winner =
      evaluation.effect === 'deny' || evaluation.policy_id === null
        ? undefined
        : set.table.byId.get(evaluation.policy_id)?.policy;
    // A full session adds no more: a decision whose policy would add a new label is denied.
    if (this.deps.sessions?.wouldOverfill(sessionLabels, winner)) {
      return {
        outcome: { ...deny('session.too_many_labels'), policy_id: evaluation.policy_id },
        matched: [],
        status,
        approvalSeconds: null,
        sessionLabels,
        adds: [],
      };
    }
    const approval = evaluation.effect === 'review' ? winner?.approval : undefined;
    const approvalSeconds = approval?.required ? (approval.timeout_seconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS) : null;
    return {
      outcome,
      matched: evaluation.effect === 'deny' ? [] : evaluation.matched,
      status,
      approvalSeconds,
      sessionLabels,
      adds: winner?.labels ?? [],
    };
  }

  /** The ranges of history values the gate accepts for `evaluated` (exact on the first attempt). */
  private historyRanges(
    prepared: Prepared,
    values: readonly number[],
    evaluated: Evaluated,
    exact: boolean,
  ): Array<{ lo: number; hi: number | null }> {
    const plan = prepared.plan!;
    const base = sameness(evaluated);
    return ranges(plan, values, (v) => (v === values ? base : sameness(this.judge(prepared, v))), exact);
  }
}

/** The kind of history entry a decision of this outcome leaves: a denial's is `denied`, an allow's or review's `counted`. */
const entryKind = (outcome: Outcome): 'counted' | 'denied' => (outcome.effect === 'deny' ? 'denied' : 'counted');

/** A store call without tracing: no wrapper allocated per decision. */
const untraced = <T>(_name: string, call: () => Promise<T>): Promise<T> => call();

/** What the limits judge a request by (the same for a decision and its preview). */
function limitSubject(principal: Principal, input: DecisionInput, matched: readonly Policy[], nowMs: number) {
  return {
    principal,
    agentId: input.agent_id,
    sessionId: input.session_id ?? null,
    onBehalfOf: input.on_behalf_of ?? null,
    amount: input.amount ?? null,
    amounts: input.amounts ?? null,
    matched,
    nowMs,
  };
}

function checkAction(action: string, path = '/action'): void {
  if (action.length > 256 || !isValidAction(action)) {
    const message = `action "${action}" must be namespace.verb ([a-z][a-z0-9_]* each part, no wildcards), at most 256 characters`;
    throw new InvalidActionError(message, path === '/action' ? {} : { details: [{ path, message }] });
  }
}

/**
 * The warning of a decision in an environment without any policy (every request
 * denied, policy.not_found): a live key used after the README's start, which
 * loads the examples into test only, meets this.
 */
function noPolicies(environment: Environment): WarningRow {
  const other = environment === 'live' ? 'test' : 'live';
  return {
    code: 'environment.no_policies',
    message: `the ${environment} environment has no policies, so every request is denied: load them with a ${environment} key (authz push, PUT /v1/bundle or POST /v1/policies); the ${other} environment's policies are separate`,
    policy_ids: [],
  };
}

function deny(reason: string): Outcome {
  return { effect: 'deny', reason, policy_id: null, matched_policy_ids: [], warnings: [] };
}
