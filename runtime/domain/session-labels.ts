/**
 * Sessions and their labels (docs/api.md#sessions, docs/policies.md#labels): what
 * an agent run (account, environment, `session_id`) has read. Labels only grow;
 * a session ends, labels and all, after AUTHZ_SESSION_IDLE_HOURS without a
 * decision or a label (readers treat it as ended at once; the sweep of
 * background/sessions.ts deletes it).
 *
 * Three sources add labels: a winning policy's `labels:` (written with the
 * decision, in its group commit transaction: {@link SessionService.forWrite}; a
 * review's on approval: {@link SessionService.addInTx}), the API
 * ({@link SessionService.add}) and the MCP gateway's output
 * ({@link SessionService.addGatewayLabels}). A decision reads the session's
 * labels only when one of its candidate policies reads `session.labels` or adds
 * labels ({@link SessionService.forDecision}); other decisions do no extra work.
 */
import {
  actionPatternMatches,
  matchGlob,
  type EvaluationInput,
  type DecisionTable,
  type Policy,
} from '../../compiler/index.js';
import type { SessionLabelsRequest } from '../../clients/typescript/wire.js';
import type { Clock } from '../clock.js';
import { InvalidFieldError, SessionFullError, SessionNotFoundError, TooManyLabelsError } from '../errors/api-error.js';
import { TtlCache } from '../shared/ttl-cache.js';
import type { Sql, Tx } from '../store/connect.js';
import type { LabelsCheck } from '../store/limits.js';
import type { DecisionRow } from '../store/decisions.js';
import {
  addSessionLabels,
  findSession,
  sessionLabels,
  type LabelSource,
  type SessionAdd,
  type SessionRow,
} from '../store/sessions.js';
import type { Principal, Tenant } from '../tenant.js';

/** Most labels a session holds. */
export const MAX_SESSION_LABELS = 256;
/** Most labels one POST /v1/sessions/:session_id/labels adds. */
export const MAX_LABELS_PER_CALL = 32;
/** A label: what docs/policies.md#labels allows (`private`, `untrusted`, `pii`, `external.mail`). */
export const LABEL_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;

/** The body of POST /v1/sessions/:session_id/labels (generated from schemas/api/session-labels.schema.json). */
export type LabelsInput = SessionLabelsRequest;

/** The label-related rows of a policy set: the only ones a decision reads labels for. */
interface LabelRows {
  readonly rows: ReadonlyArray<{ policy: Policy }>;
}

/** Sessions this process has seen a decision of, per key: opened in the store, and not idle since. */
const OPENED_ENTRIES = 100_000;

export class SessionService {
  private readonly idleSeconds: number;
  private readonly opened: TtlCache<true>;
  /** Per session, the labels this process last knew it to hold: a decision's first guess (re-checked by its gate). */
  private readonly remembered: TtlCache<string[]>;
  private readonly tables = new WeakMap<DecisionTable, LabelRows>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    idleHours: number,
  ) {
    this.idleSeconds = idleHours * 3600;
    // Half the idle time: a session this process decided for that recently cannot have ended.
    this.opened = new TtlCache(clock, (this.idleSeconds * 1000) / 2, OPENED_ENTRIES);
    this.remembered = new TtlCache(clock, (this.idleSeconds * 1000) / 2, OPENED_ENTRIES);
  }

  /**
   * The session's labels for a decision or a preview, only when a candidate
   * policy (agent and action match, shadow ones included) reads `session.labels`
   * or adds labels; null otherwise, or without a session. A session that does
   * not exist (or ended) has none: `[]`. With `guess` (a decision, never a
   * preview) the labels this process last knew the session to hold, when it
   * knows them (`guessed`: the decision's gate re-checks them, {@link check});
   * else read from the store.
   *
   * @example
   * const found = await sessions.forDecision(principal, set.table, { agent_id: 'bot', action: 'email.send', session_id: 'run-1' }); // => { labels: ['private'], guessed: false }
   */
  async forDecision(
    t: Tenant,
    table: DecisionTable,
    request: EvaluationInput & { session_id?: string | null },
    guess = false,
  ): Promise<{ labels: string[]; guessed: boolean } | null> {
    const sessionId = request.session_id;
    if (!sessionId) return null;
    const { rows } = this.labelRows(table);
    if (rows.length === 0 || !rows.some(({ policy }) => candidate(policy, request))) return null;
    const key = sessionKey(t.accountId, t.environment, sessionId);
    const remembered = guess ? this.remembered.get(key) : undefined;
    if (remembered) return { labels: remembered.value, guessed: true };
    const labels = (await sessionLabels(this.sql, t, sessionId, this.clock.now(), this.idleSeconds)) ?? [];
    this.remembered.set(key, labels);
    return { labels, guessed: false };
  }

  /** What the gate re-checks of labels a decision took from memory (functions/authz_decide_batch.sql). */
  check(sessionId: string, held: readonly string[]): LabelsCheck {
    return { session_id: sessionId, held, idle_s: this.idleSeconds };
  }

  /**
   * Whether the winning policy would take a full session past the cap: its labels
   * not yet in `held` would make more than 256 (a deny, `session.too_many_labels`).
   */
  wouldOverfill(held: readonly string[] | null, winner: Policy | undefined): boolean {
    const fresh = newLabels(held ?? [], winner?.labels ?? []);
    return fresh.length > 0 && (held?.length ?? 0) + fresh.length > MAX_SESSION_LABELS;
  }

  /**
   * What the decision's group commit writes to its session, in the decision's
   * transaction: the winning policy's labels when it is allowed now (`adds`),
   * else, at the session's first decision in this process (or after half the
   * idle time), only its opening; null when there is nothing to write.
   *
   * @example
   * writer.write({ decision: row, session: sessions.forWrite(row, ['private']) ?? undefined });
   */
  forWrite(row: DecisionRow, adds: readonly string[]): SessionAdd | null {
    if (row.session_id === null) return null;
    const key = sessionKey(row.account_id, row.environment, row.session_id);
    if (adds.length === 0 && this.opened.get(key)) return null;
    // Capped in the store, under the session's lock: exact across concurrent decisions and processes.
    const cap = adds.length > 0 ? MAX_SESSION_LABELS : null;
    return this.item(
      row,
      row.session_id,
      adds,
      { source: 'policy', decision_id: row.id, detail: null, agent_id: row.agent_id, cap },
      row.evaluated_at,
    );
  }

  /** After the decision's write: this process knows the session is open, and (when it read them) the labels it holds now. */
  written(row: DecisionRow, labels: string[] | null = null): void {
    if (row.session_id === null) return;
    const key = sessionKey(row.account_id, row.environment, row.session_id);
    this.opened.set(key, true);
    if (labels !== null) this.remembered.set(key, labels);
  }

  /**
   * POST /v1/sessions/:session_id/labels: adds the labels (source `api`), opening
   * the session when it is new or ended. 400 for a bad label or more than 32,
   * 409 `session.too_many_labels` past 256 (nothing added).
   *
   * @example
   * const session = await sessions.add(principal, 'run-1', { labels: ['private'], agent_id: 'bot', detail: 'read /hr/salaries.csv' });
   */
  async add(principal: Principal, sessionId: string, input: LabelsInput): Promise<SessionRow> {
    const labels = checkLabels(input.labels);
    const now = new Date(this.clock.now());
    const extra = {
      source: 'api' as const,
      decision_id: null,
      detail: input.detail ?? null,
      agent_id: input.agent_id,
      cap: MAX_SESSION_LABELS,
    };
    const outcome = await this.sql.begin((tx) => this.addInTx(tx, principal, sessionId, labels, extra, now));
    if (outcome === 'full') throw fullError(sessionId);
    return this.get(principal, sessionId);
  }

  /**
   * Adds labels inside the caller's transaction (the session stays locked until
   * it ends): an approval's policy labels, the gateway's. 'full': nothing added.
   */
  async addInTx(
    tx: Tx,
    t: Tenant,
    sessionId: string,
    labels: readonly string[],
    extra: {
      source: LabelSource;
      decision_id: string | null;
      detail: string | null;
      agent_id: string | null;
      cap: number | null;
    },
    now: Date,
  ): Promise<'ok' | 'full'> {
    const [outcome] = await addSessionLabels(tx, [
      this.item({ account_id: t.accountId, environment: t.environment }, sessionId, labels, extra, now),
    ]);
    return outcome!;
  }

  /**
   * The MCP gateway's labels for a decision's result (POST /v1/decisions/:id/output),
   * in the caller's transaction: added to the decision's own session (source
   * `gateway`, `decision_id` the decision's), atomically and within the cap
   * (throws 409 `session.too_many_labels`, nothing added, when they would pass
   * 256). A decision without a session has none to label: nothing is added.
   *
   * @example
   * await sql.begin((tx) => sessions.addGatewayLabels(tx, decisionRow, ['untrusted'], 'inbox_read'));
   */
  async addGatewayLabels(
    tx: Tx,
    decision: DecisionRow,
    labels: readonly string[],
    detail: string | null = null,
  ): Promise<void> {
    if (decision.session_id === null || labels.length === 0) return;
    const t = { accountId: decision.account_id, environment: decision.environment };
    const extra = {
      source: 'gateway' as const,
      decision_id: decision.id,
      detail,
      agent_id: decision.agent_id,
      cap: MAX_SESSION_LABELS,
    };
    if (
      (await this.addInTx(tx, t, decision.session_id, checkLabels(labels), extra, new Date(this.clock.now()))) ===
      'full'
    )
      throw fullError(decision.session_id);
  }

  /**
   * GET /v1/sessions/:session_id: 404 `session.not_found` when it has no decision
   * or label, or has ended.
   */
  async get(t: Tenant, sessionId: string): Promise<SessionRow> {
    const row = await findSession(this.sql, t, sessionId, this.clock.now(), this.idleSeconds);
    if (!row)
      throw new SessionNotFoundError(
        `no session ${sessionId} (none had a decision or a label, or it ended after ${this.idleSeconds / 3600} hours idle)`,
      );
    return row;
  }

  private item(
    t: { account_id: string; environment: string },
    sessionId: string,
    labels: readonly string[],
    extra: {
      source: LabelSource;
      decision_id: string | null;
      detail: string | null;
      agent_id: string | null;
      cap: number | null;
    },
    now: Date,
  ): SessionAdd {
    return {
      account_id: t.account_id,
      environment: t.environment,
      session_id: sessionId,
      labels,
      ...extra,
      now,
      idle_seconds: this.idleSeconds,
    };
  }

  private labelRows(table: DecisionTable): LabelRows {
    let found = this.tables.get(table);
    if (!found) {
      // The compiler knows which rows' conditions read session.labels (compiler/condition/ast.ts readsSessionLabels).
      const rows = table.rows.filter((row) => (row.policy.labels?.length ?? 0) > 0 || row.readsLabels);
      found = { rows };
      this.tables.set(table, found);
    }
    return found;
  }
}

/**
 * A decision whose policy's labels the store refused (they would take its full
 * session past 256): denied, `session.too_many_labels`, as the evaluation
 * denies one it sees coming (docs/policies.md#labels).
 *
 * @example
 * deniedForFullSession(row).reason; // => 'session.too_many_labels'
 */
export function deniedForFullSession(row: DecisionRow): DecisionRow {
  return {
    ...row,
    effect: 'deny',
    reason: 'session.too_many_labels',
    matched_policy_ids: [],
    warnings: [],
    status: 'denied',
    shadow: null,
    review_status: null,
    approval_expires_at: null,
  };
}

/** The labels of `adds` not in `held`, once each. */
export function newLabels(held: readonly string[], adds: readonly string[]): string[] {
  return [...new Set(adds)].filter((l) => !held.includes(l));
}

/** A policy whose agents and actions match the request (a candidate of steps 4-6). */
function candidate(policy: Policy, request: EvaluationInput): boolean {
  if (policy.agents !== undefined && !policy.agents.some((g) => matchGlob(g, request.agent_id))) return false;
  return policy.actions.some((pattern) => actionPatternMatches(pattern, request.action));
}

function sessionKey(accountId: string, environment: string, sessionId: string): string {
  return `${accountId}\u0000${environment}\u0000${sessionId}`;
}

function fullError(sessionId: string): SessionFullError {
  return new SessionFullError(
    `session ${sessionId} holds ${MAX_SESSION_LABELS} labels, the most a session holds; these would add more`,
  );
}

/** The labels of a call, checked: at most 32, each `[a-z][a-z0-9_.-]{0,63}`; duplicates once. */
function checkLabels(labels: readonly string[]): string[] {
  if (labels.length > MAX_LABELS_PER_CALL)
    throw new TooManyLabelsError(`${labels.length} labels in one call; at most ${MAX_LABELS_PER_CALL}`);
  const details = labels.flatMap((label, i) =>
    LABEL_PATTERN.test(label)
      ? []
      : [
          {
            path: `/labels/${i}`,
            message: `label ${JSON.stringify(label)} must match [a-z][a-z0-9_.-]{0,63} (lower case, 1-64 characters)`,
          },
        ],
  );
  if (details.length > 0) throw new InvalidFieldError(details[0]!.message, { details });
  return [...new Set(labels)];
}
