/**
 * Where budgets and rate limits (runtime/spend-limits/) and permit tokens
 * (runtime/permits/) plug into the decision path.
 */
import type { Policy } from '../../compiler/index.js';
import type { Principal, Tenant } from '../tenant.js';
import type { SqlOrTx, Tx } from '../store/connect.js';
import type { DecisionRow } from '../store/decisions.js';
import type { BudgetUsage, DecisionWrite, LabelsCheck } from '../store/limits.js';
import type { HistoryGate } from '../store/history.js';

/** Who a request spends for: the keys of agent-, session- and user-scoped budgets. */
export interface SpendSubject {
  agentId: string;
  sessionId: string | null;
  onBehalfOf: string | null;
}

export interface LimitContext {
  principal: Principal;
  agentId: string;
  /** The request's session and user: the keys of session- and user-scoped budgets. */
  sessionId?: string | null;
  onBehalfOf?: string | null;
  amount: number | null;
  /** Per held unit (`{ "USD": 0.12, "tokens": 3000 }`), when budgets of two held units apply. */
  amounts?: Readonly<Record<string, number>> | null;
  /** Every matching enabled policy of an allow or review (their limits and budgets all apply); empty otherwise. */
  matched: readonly Policy[];
  nowMs: number;
  decisionId: string;
  /** When the decision (and a fiat hold of its amount) expires. */
  expiresAt: Date;
  /**
   * The decision awaits approval: its `calls` budgets are only checked now
   * (consumed + held + 1 within the limit, read only) and consumed on approval
   * ({@link DecisionLimits.applyDeferredCalls}), never twice.
   */
  deferCalls?: boolean;
  /** The decision's history re-check and entry (runtime/history/), judged and recorded in the same statement. */
  history?: HistoryGate | null;
  /** A retry after `history_stale`: its rate limits (and the key's) already counted it; only the rest is sent. */
  ratesAdmitted?: boolean;
  /** The remembered session labels it was evaluated with: re-checked first (`staleLabels`: evaluate again with these). */
  labels?: LabelsCheck | null;
  /**
   * The decision as it stands if its limits change nothing of it: stored in the
   * same statement as the limits when they do (`written` in the answer), so the
   * decision costs one round trip (functions/authz_decide_batch.sql). Called
   * only when the limits go to the store.
   */
  write?: (() => DecisionWrite | null) | null;
}

export interface LimitWarning {
  code: string;
  message: string;
  policy_ids: string[];
}

export type LimitVerdict =
  { deny: 'budget.exceeded'; policy_id: string; message: string } | { warnings: LimitWarning[] } | null;

/**
 * What `apply` answers: the verdict, the history values under the gate's
 * locks (null without history) and whether the decision sent with it was
 * stored (`write`: only when the verdict is null); or `staleLabels`: the
 * session's labels are another set now (nothing moved); or `stale`: a history value left its range,
 * evaluate again with these values.
 */
export type AppliedLimits =
  | { verdict: LimitVerdict; history: number[] | null; written: boolean }
  | { stale: number[] }
  | { staleLabels: string[] };

export interface DecisionLimits {
  /** Evaluation step 3: a budget of the agent, of this session or of this user exhausted this period, if any. */
  exhausted(
    principal: Principal,
    subject: SpendSubject,
    nowMs: number,
    policy: (id: string) => Policy | undefined,
  ): { policy_id: string } | null;
  /**
   * Every decision: the platform limit of the API key; with evaluation step 7
   * (allow and review), the matched policies' rate limits and budgets. Over a
   * limit: throws RateLimitExceededError; a budget: a deny, or warnings. Null
   * when nothing applies.
   */
  apply(context: LimitContext): Promise<AppliedLimits>;
  /** Whether these policies' rate limits or budgets apply to the agent now (the store judges them, in the limits gate). */
  judgesInStore(matched: readonly Policy[], agentId: string, nowMs: number): boolean;
  /** What `apply` would answer now for the policies' limits and budgets, using nothing (a rate limit as a value). */
  preview(
    context: Omit<LimitContext, 'decisionId' | 'expiresAt'>,
  ): Promise<LimitVerdict | { rate_limited: number; message: string }>;
  /**
   * An approval, inside the caller's transaction: the `calls` budgets of the
   * matched policies that the decision deferred, consumed now (a deny when one
   * has no room left). Call `note` with `usage` after commit.
   */
  applyDeferredCalls(
    tx: Tx,
    principal: Principal,
    subject: SpendSubject,
    matched: readonly Policy[],
    nowMs: number,
  ): Promise<{ verdict: LimitVerdict; usage: BudgetUsage[] }>;
  /** Confirm or reject inside the caller's transaction: the decision's holds (per unit: `amounts`, else `amount`, else the held amount). */
  resolveHolds(
    tx: SqlOrTx,
    principal: Principal,
    decisionId: string,
    confirm: boolean,
    amount: number | null,
    amounts?: Record<string, number> | null,
  ): Promise<BudgetUsage[]>;
  /** After the transaction of `resolveHolds` commits. */
  note(principal: Principal, usage: readonly BudgetUsage[]): void;
  /** The API key's platform limit alone (a replayed answer, which makes no decision); over it: throws RateLimitExceededError. */
  admitKey(principal: Principal): Promise<void>;
}

/**
 * Approvals that timed out, settled when read (domain/approvals.ts): a read on
 * the service clock after `approval_expires_at` already shows the denial.
 */
export interface ApprovalTimeouts {
  /** The decision after its approval timed out; undefined when it was not overdue (any more). */
  timeOut(t: Tenant, id: string): Promise<DecisionRow | undefined>;
  /** Every overdue approval of the environment (all environments without one); how many. */
  timeOutOverdue(t?: Tenant): Promise<number>;
}

export interface PermitIssuer {
  /**
   * The permit token of an allow or review decision (null when tokens are not
   * issued); a promise when another thread signs it (AUTHZ_SIGN_WORKER=1).
   */
  issue(decision: DecisionRow): string | null | Promise<string | null>;
}

/** No tokens (the bench's "allow without token" figure). */
export const noPermits: PermitIssuer = { issue: () => null };
