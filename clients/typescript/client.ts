/**
 * `AuthzClient`: the agent-side client of the decision API (docs/agents.md#2-a-typescript-agent). Every call is retried on network failures, timeouts,
 * 5xx and 429 under one `Idempotency-Key`, and throws an `AuthzError` when it
 * gets no decision: the client fails closed, it never answers allow itself.
 */
import { AuthzError } from './errors.js';
import { guarded, type GuardClient } from './guard.js';
import { neverSent, sendOnce, type FetchLike, type HttpAnswer, type HttpTarget } from './http.js';
import { isRetryable, withRetries, type RetryEvent, type RetryPolicy } from './retry.js';
import type {
  BudgetRemaining,
  ConfirmOptions,
  Decision,
  DecisionInput,
  DecisionOutputInput,
  DecisionPreview,
  LabelsInput,
  PossibleActions,
  RemainingQuery,
  RequestOptions,
  Session,
} from './types.js';

/** What `onRetry` is told: the failed attempt, the wait, and the call it belongs to. */
export interface ClientRetryEvent extends RetryEvent {
  method: 'GET' | 'POST';
  path: string;
}

export interface AuthzClientOptions {
  /** The service, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** `svc_test_sk_...` or `svc_live_sk_...`. */
  apiKey: string;
  /** Time limit of each attempt in ms (default 10000). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 3). */
  retries?: number;
  /** First backoff in ms, doubled for each later retry (default 200). */
  backoffMs?: number;
  /** A 429 asking to wait longer than this is thrown at once (default 60). */
  maxRetryAfterSeconds?: number;
  /** `session_id` of every decision that names none. */
  sessionId?: string;
  /** `on_behalf_of` of every decision that names none. */
  onBehalfOf?: string;
  /** The fetch to use (default the global one). */
  fetch?: FetchLike;
  /** Called before each retry (logging, metrics); awaited, and an error it throws ends the call. */
  onRetry?: (event: ClientRetryEvent) => void | Promise<void>;
}

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  options: RequestOptions;
}

const DEFAULTS = { timeoutMs: 10_000, retries: 3, backoffMs: 200, maxRetryAfterSeconds: 60 };

const newIdempotencyKey = (): string => globalThis.crypto.randomUUID();
const decisionPath = (id: string) => `/v1/decisions/${encodeURIComponent(id)}`;
const sessionPath = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;

/** Non-negative number option, or its default. */
function count(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new TypeError(`AuthzClient: ${name} must be a number >= 0`);
  return value;
}

export class AuthzClient {
  readonly baseUrl: string;
  readonly sessionId: string | undefined;
  readonly onBehalfOf: string | undefined;
  readonly #target: HttpTarget;
  readonly #timeoutMs: number;
  readonly #policy: RetryPolicy;
  readonly #onRetry: AuthzClientOptions['onRetry'];

  /**
   * @example
   * const authz = new AuthzClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.AUTHZ_API_KEY!, sessionId: 'run-42' });
   */
  constructor(options: AuthzClientOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '')
      throw new TypeError('AuthzClient: apiKey is required');
    if (typeof options.baseUrl !== 'string' || !URL.canParse(options.baseUrl))
      throw new TypeError('AuthzClient: baseUrl must be an absolute URL');
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('AuthzClient: no fetch available; pass options.fetch');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.sessionId = options.sessionId;
    this.onBehalfOf = options.onBehalfOf;
    this.#target = { baseUrl: this.baseUrl, apiKey: options.apiKey, fetch: fetchImpl };
    this.#timeoutMs = count('timeoutMs', options.timeoutMs, DEFAULTS.timeoutMs);
    this.#policy = {
      retries: count('retries', options.retries, DEFAULTS.retries),
      backoffMs: count('backoffMs', options.backoffMs, DEFAULTS.backoffMs),
      maxRetryAfterSeconds: count('maxRetryAfterSeconds', options.maxRetryAfterSeconds, DEFAULTS.maxRetryAfterSeconds),
    };
    this.#onRetry = options.onRetry;
  }

  /**
   * Asks for a decision. Answers the decision body for allow, deny and review
   * alike: a deny is a value (`effect: 'deny'`), not an exception. The
   * client's `sessionId` and `onBehalfOf` fill `session_id` and `on_behalf_of`
   * when the input has none (`null` sends none). Throws `AuthzError` on an
   * error answer, or when no answer came after the retries.
   *
   * @example
   * const d = await authz.decide({ agent_id: 'support-7', action: 'payments.refund', resource: 'order:981', amount: 20 });
   * if (d.effect === 'deny') return `refused: ${d.reason}`;
   */
  async decide(input: DecisionInput, options: RequestOptions = {}): Promise<Decision> {
    return (await this.#decide(input, options)).body;
  }

  /**
   * What a decision would be now, counting limits and budgets without using
   * them; nothing is stored, held or signed (`POST /v1/decisions/preview`, extension).
   *
   * @example
   * const p = await authz.preview({ agent_id: 'support-7', action: 'payments.refund', amount: 20 });
   * if (p.effect === 'deny') hideRefundButton(p.reason);
   */
  async preview(input: DecisionInput, options: RequestOptions = {}): Promise<DecisionPreview> {
    return (
      await this.#send<DecisionPreview>({
        method: 'POST',
        path: '/v1/decisions/preview',
        body: this.#decisionBody(input),
        options,
      })
    ).body;
  }

  /**
   * Which actions the agent could ever be allowed (resources and conditions
   * aside) (`POST /v1/actions/possible`, extension).
   *
   * @example
   * const { data } = await authz.possible('research-bot', ['files.read', 'files.write']);
   * const usable = data.filter((a) => a.possible).map((a) => a.action);
   */
  async possible(agent_id: string, actions: string[], options: RequestOptions = {}): Promise<PossibleActions> {
    return (
      await this.#send<PossibleActions>({
        method: 'POST',
        path: '/v1/actions/possible',
        body: { agent_id, actions },
        options,
      })
    ).body;
  }

  /**
   * Confirms an allow or review decision: the action was carried out. A fiat
   * budget's hold becomes consumption (`amount` when given, else the held
   * amount). A retry that finds the decision already confirmed (the first
   * attempt was applied but its answer lost) counts as done.
   *
   * @example
   * const d = await authz.decide({ agent_id: 'bot-1', action: 'payments.charge', amount: 30 });
   * await chargeCard(27.5);
   * await authz.confirm(d.id, { amount: 27.5 });
   */
  async confirm(id: string, confirm: ConfirmOptions = {}, options: RequestOptions = {}): Promise<Decision> {
    const body = {
      ...(confirm.amount === undefined ? {} : { amount: confirm.amount }),
      ...(confirm.amounts === undefined ? {} : { amounts: confirm.amounts }),
    };
    return this.#settle(id, 'confirm', body, options);
  }

  /**
   * What is left this period of each budget that would apply to the agent, its
   * session and its user (`GET /v1/budgets/remaining`, extension; the key needs
   * `budgets:read`). The client's `sessionId` and `onBehalfOf` fill in
   * `session_id` and `on_behalf_of` when the query names none.
   *
   * @example
   * const left = await authz.budgetsRemaining({ agent_id: 'research-bot', session_id: 'run_42' });
   * const usd = left.find((b) => b.unit === 'USD')?.remaining;
   */
  async budgetsRemaining(query: RemainingQuery, options: RequestOptions = {}): Promise<BudgetRemaining[]> {
    const params = new URLSearchParams({ agent_id: query.agent_id });
    for (const [field, fallback] of [
      ['session_id', this.sessionId],
      ['on_behalf_of', this.onBehalfOf],
    ] as const) {
      const value = query[field] === undefined ? fallback : query[field];
      if (typeof value === 'string') params.set(field, value);
    }
    return (
      await this.#send<{ object: 'list'; data: BudgetRemaining[] }>({
        method: 'GET',
        path: `/v1/budgets/remaining?${params}`,
        options,
      })
    ).body.data;
  }

  /**
   * Adds labels to a session: what a tool found in what it read (`private`,
   * `untrusted`, `pii`), so that the session's next decisions, in any process,
   * are decided with them (`POST /v1/sessions/:session_id/labels`, extension;
   * the key needs `decisions:write`). `session_id` defaults to the client's
   * `sessionId`. Answers the session. Adding a label the session holds changes
   * nothing, so a retry is harmless. Throws `AuthzError` (`validation.too_many_labels`
   * above 32 labels, `session.too_many_labels` past 256 in the session).
   *
   * @example
   * await authz.addLabels({ labels: ['private'], agent_id: 'files-bot', detail: 'read /hr/salaries.csv' });
   */
  async addLabels(input: LabelsInput, options: RequestOptions = {}): Promise<Session> {
    const { session_id, ...body } = input;
    return (
      await this.#send<Session>({
        method: 'POST',
        path: `${sessionPath(this.#session(session_id))}/labels`,
        body,
        options,
      })
    ).body;
  }

  /**
   * Reads a session: its labels (each with `added_at`, `source`, and
   * `decision_id` / `detail` when known), its decisions and its last decision's
   * time (`GET /v1/sessions/:session_id`, extension; the key needs
   * `decisions:read`). Defaults to the client's `sessionId`. A session without a
   * decision or label, or ended after `AUTHZ_SESSION_IDLE_HOURS`, throws
   * `AuthzError` with code `session.not_found`.
   *
   * @example
   * const { labels } = await authz.getSession('run-42');
   * if (labels.some((l) => l.label === 'untrusted')) console.log('this run read untrusted content');
   */
  async getSession(session_id?: string, options: RequestOptions = {}): Promise<Session> {
    return (await this.#send<Session>({ method: 'GET', path: sessionPath(this.#session(session_id)), options })).body;
  }

  /** The session a call names, else the client's. */
  #session(session_id: string | undefined): string {
    const id = session_id ?? this.sessionId;
    if (typeof id !== 'string' || id === '')
      throw new TypeError('AuthzClient: give a session_id, or create the client with a sessionId');
    return id;
  }

  /**
   * Rejects an allow or review decision: the action was not carried out; any
   * budget hold is released. A retry that finds it already rejected counts as done.
   *
   * @example
   * const d = await authz.decide({ agent_id: 'bot-1', action: 'files.delete', resource: 'file:/tmp/x' });
   * await authz.reject(d.id);
   */
  async reject(id: string, options: RequestOptions = {}): Promise<Decision> {
    return this.#settle(id, 'reject', {}, options);
  }

  /**
   * Reads a decision. `waitSeconds` (1..60, extension: Human review) waits
   * until a decision awaiting approval changes.
   *
   * @example
   * const d = await authz.get('dec_8Qk2...');
   * console.log(d.status); // 'pending' | 'confirmed' | 'rejected' | 'expired' | 'denied'
   */
  async get(id: string, options: RequestOptions & { waitSeconds?: number } = {}): Promise<Decision> {
    const query = options.waitSeconds === undefined ? '' : `?wait=${options.waitSeconds}`;
    // A long poll may take as long as its wait: the attempt's limit grows with it.
    const limit = options.timeoutMs ?? this.#timeoutMs;
    const timeoutMs = options.waitSeconds === undefined ? limit : Math.max(limit, (options.waitSeconds + 5) * 1000);
    return (
      await this.#send<Decision>({
        method: 'GET',
        path: `${decisionPath(id)}${query}`,
        options: { ...options, timeoutMs },
      })
    ).body;
  }

  /**
   * A fresh permit token for an approved decision that awaited approval
   * (`POST /v1/decisions/:id/permit`, extension: Human review).
   *
   * @example
   * const { permit_token } = await authz.permit(decision.id);
   */
  async permit(id: string, options: RequestOptions = {}): Promise<{ permit_token: string }> {
    return (
      await this.#send<{ permit_token: string }>({
        method: 'POST',
        path: `${decisionPath(id)}/permit`,
        body: {},
        options,
      })
    ).body;
  }

  /**
   * Runs `work` only when the action is allowed, and records the outcome.
   * Decides; on deny throws `DecisionDeniedError` (the work never runs);
   * otherwise runs `work(decision)`, then confirms the decision (with the
   * input's `amount` when given) when it resolves, or rejects it when it throws
   * and rethrows the work's error. The confirm or reject has completed when
   * `guard` returns or throws. Answers the work's answer. If the work succeeded
   * but the confirm failed after its retries, throws that `AuthzError` with
   * `.result` holding the work's answer. A review decision that awaits
   * approval is waited for first (extension: Human review).
   *
   * @example
   * const receipt = await authz.guard(
   *   { agent_id: 'billing-bot', action: 'payments.charge', resource: 'customer:cus_1', amount: 12.5 },
   *   async (decision) => payments.charge('cus_1', 12.5, { permit: decision.permit_token }),
   * );
   */
  async guard<T>(input: DecisionInput, work: (decision: Decision) => Promise<T> | T): Promise<T> {
    const client: GuardClient = {
      decideWithRequestId: async (i) => {
        const answer = await this.#decide(i, {});
        return { decision: answer.body, requestId: answer.requestId };
      },
      confirm: (id, confirm) => this.confirm(id, confirm),
      reject: (id) => this.reject(id),
      get: (id, options) => this.get(id, options),
      permit: (id) => this.permit(id),
    };
    return guarded(client, input, work);
  }

  #decide(input: DecisionInput, options: RequestOptions): Promise<HttpAnswer<Decision>> {
    return this.#send<Decision>({ method: 'POST', path: '/v1/decisions', body: this.#decisionBody(input), options });
  }

  /** The fields that are set, with the client's session and user defaults. */
  #decisionBody(input: DecisionInput): Record<string, unknown> {
    const body: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(input)) if (value !== undefined) body[field] = value;
    for (const [field, fallback] of [
      ['session_id', this.sessionId],
      ['on_behalf_of', this.onBehalfOf],
    ] as const) {
      const given = input[field];
      if (given === null) delete body[field];
      else if (given === undefined && fallback !== undefined) body[field] = fallback;
    }
    return body;
  }

  /**
   * Records what a gateway read in the result of the request decision `id`
   * allowed (`POST /v1/decisions/:id/output`, extension; scope
   * `decisions:write`): the labels join the decision's session before this
   * returns. Once per decision: a 409 `decision.output_recorded` on a retry,
   * after an attempt that may have been applied, is checked with a read, and
   * the decision with an output answers.
   *
   * @example
   * const d = await authz.recordOutput('dec_8Qk2...', { labels: ['untrusted'], findings: [{ kind: 'pii', rule: 'email', count: 1, action: 'redact' }] });
   * console.log(d.output?.labels); // ['untrusted']
   */
  async recordOutput(id: string, output: DecisionOutputInput, options: RequestOptions = {}): Promise<Decision> {
    const { idempotencyKey: _key, ...readOptions } = options;
    let maybeApplied = false;
    const body = { labels: output.labels, findings: output.findings };
    return (
      await this.#send<Decision>(
        { method: 'POST', path: `${decisionPath(id)}/output`, body, options },
        async (error) => {
          if (maybeApplied && error.status === 409 && error.code === 'decision.output_recorded') {
            const current = await this.get(id, readOptions);
            if (current.output !== null) return { body: current, status: 200, requestId: error.requestId };
          }
          if (isRetryable(error) && error.status !== 429 && !neverSent(error)) maybeApplied = true;
          return null;
        },
      )
    ).body;
  }

  /**
   * confirm or reject: a 409 on a retry, after an attempt that may have been
   * applied, is checked with a read; the decision in the wanted state is success.
   */
  async #settle(id: string, verb: 'confirm' | 'reject', body: object, options: RequestOptions): Promise<Decision> {
    const wanted = verb === 'confirm' ? 'confirmed' : 'rejected';
    const { idempotencyKey: _key, ...readOptions } = options;
    let maybeApplied = false;
    return (
      await this.#send<Decision>(
        { method: 'POST', path: `${decisionPath(id)}/${verb}`, body, options },
        async (error) => {
          if (
            maybeApplied &&
            error.status === 409 &&
            (error.code === 'decision.already_confirmed' || error.code === 'decision.not_pending')
          ) {
            const current = await this.get(id, readOptions);
            if (current.status === wanted) return { body: current, status: 200, requestId: error.requestId };
          }
          if (isRetryable(error) && error.status !== 429 && !neverSent(error)) maybeApplied = true;
          return null;
        },
      )
    ).body;
  }

  /**
   * One call with its retries. `recover` may turn a failed attempt into an
   * answer (else null: the error stands).
   */
  async #send<T>(call: Call, recover?: (error: AuthzError) => Promise<HttpAnswer<T> | null>): Promise<HttpAnswer<T>> {
    const { signal, timeoutMs = this.#timeoutMs } = call.options;
    const idempotencyKey = call.method === 'POST' ? (call.options.idempotencyKey ?? newIdempotencyKey()) : undefined;
    const onRetry = this.#onRetry;
    const policy: RetryPolicy = onRetry
      ? { ...this.#policy, onRetry: (event) => onRetry({ ...event, method: call.method, path: call.path }) }
      : this.#policy;
    return withRetries(
      async () => {
        try {
          return await sendOnce<T>(this.#target, {
            method: call.method,
            path: call.path,
            ...(call.body === undefined ? {} : { body: call.body }),
            ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
            timeoutMs,
            ...(signal ? { signal } : {}),
          });
        } catch (error) {
          const recovered = recover && error instanceof AuthzError ? await recover(error) : null;
          if (recovered) return recovered;
          throw error;
        }
      },
      policy,
      signal,
    );
  }
}
