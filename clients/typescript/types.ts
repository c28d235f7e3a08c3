/**
 * The request and answer bodies of the decision routes, as the service's
 * schemas and presenters define them (schemas/api/decision-request.schema.json,
 * schemas/api/decision-resolve.schema.json, the Decision component of the
 * OpenAPI document, and docs/api.md for the extensions).
 * test/clients/typescript-client.test.ts checks these against the schemas and
 * against real answers, so a field added on one side and not the other fails.
 */

/** `POST /v1/decisions` body fields that schemas/api/decision-request.schema.json accepts today. */
export interface DecisionRequest {
  /** The agent asking (1..256 characters); registered on first sight. */
  agent_id: string;
  /** `namespace.verb`, each part `[a-z][a-z0-9_]*`, no wildcards. */
  action: string;
  /** Free-form resource, matched by policies' resource globs (at most 1024 characters). */
  resource?: string | null;
  /** Spend (>= 0) in the unit of the held budget that applies (a currency, or tokens). */
  amount?: number | null;
  /**
   * Spend per held unit when budgets of several held units apply, e.g.
   * `{ USD: 0.12, tokens: 3000 }` (docs/budgets-and-limits.md#spend-controls-for-agent-runs);
   * `amount` alone is refused then (400 `validation.invalid_field`).
   */
  amounts?: Record<string, number> | null;
  /** Read by policy conditions as `context.*`. */
  context?: Record<string, unknown> | null;
  /** Decision (and permit token) lifetime, 1..3600 seconds; default 300. */
  ttl_seconds?: number;
  /** The agent run, conversation or task (at most 256 characters). `null`: none, overriding the client's `sessionId`. */
  session_id?: string | null;
  /** The user the agent acts for (at most 256 characters). `null`: none, overriding the client's `onBehalfOf`. */
  on_behalf_of?: string | null;
  /** base64url SHA-256 (43 characters) of the canonical JSON of the tool's arguments; the permit carries it as `args`. */
  args_digest?: string | null;
}

/**
 * Decision fields docs/api.md#decisions adds that the service's request schema does
 * not list yet (none today: `amounts` moved into DecisionRequest when the
 * service took it). A server that does not know one answers 400
 * `validation.invalid_field` when it is sent; the client sends each only when set.
 */
export interface DecisionRequestExtensions {}

/** What `decide`, `preview` and `guard` take. */
export type DecisionInput = DecisionRequest & DecisionRequestExtensions;

export type DecisionEffect = 'allow' | 'deny' | 'review';

/** `awaiting_approval` only for review policies that require approval first (docs/reviews.md#the-rules). */
export type DecisionStatus = 'pending' | 'confirmed' | 'rejected' | 'expired' | 'denied' | 'awaiting_approval';

/** An entry of `metadata.warnings` (`policy.conflict`, `budget.below_threshold`). */
export interface DecisionWarning {
  code: string;
  message: string;
  policy_ids?: string[];
}

/** A human's verdict on a review decision (docs/reviews.md#the-rules). */
export interface DecisionReview {
  status: 'open' | 'approved' | 'denied';
  reviewer: string | null;
  note: string | null;
  reviewed_at: string | null;
  /** The context of the AuthZEN access request submitted for it; present only once one was. */
  request_context?: Record<string, unknown>;
}

/** The decision body: the answer of `POST /v1/decisions`, `GET /v1/decisions/:id`, confirm and reject. */
export interface Decision {
  /** `dec_...` */
  id: string;
  object: 'decision';
  effect: DecisionEffect;
  /** `policy.matched`, or a deny reason (`policy.not_found`, `budget.exceeded`, ...). */
  reason: string;
  agent_id: string;
  action: string;
  resource: string | null;
  amount: number | null;
  policy_id: string | null;
  status: DecisionStatus;
  /** ISO 8601 UTC with milliseconds. */
  evaluated_at: string;
  expires_at: string;
  ttl_seconds: number;
  /** Ed25519 compact JWS for allow and review in the decide answer; `null` otherwise. */
  permit_token: string | null;
  livemode: boolean;
  resolved_at: string | null;
  confirmed_amount: number | null;
  metadata: {
    matched_policy_ids: string[];
    warnings: DecisionWarning[];
    /** The outcome with shadow policies enabled, when it differs (docs/rollout.md). */
    shadow?: { effect: DecisionEffect; reason: string; policy_id: string | null };
  };
  /** The request's context after redaction (docs/operations.md#start-up-and-configuration, AUTHZ_REDACT_CONTEXT). */
  context?: Record<string, unknown> | null;
  session_id?: string | null;
  on_behalf_of?: string | null;
  /** The request's `args_digest`, when it gave one. */
  args_digest?: string;
  /** `null` on allow and deny (docs/reviews.md#the-rules). */
  review?: DecisionReview | null;
  /** Set while a decision awaits approval. */
  approval_expires_at?: string | null;
}

/** `POST /v1/decisions/:id/confirm` body (schemas/api/decision-resolve.schema.json). */
export interface ConfirmOptions {
  /** The amount actually spent; defaults to the held amount. */
  amount?: number;
  /** Per held unit, what was actually spent (e.g. `{ USD: 0.09, tokens: 2410 }`); a unit not named confirms its held amount. */
  amounts?: Record<string, number>;
}

/** Whose budgets `budgetsRemaining` asks about (`GET /v1/budgets/remaining`). */
export interface RemainingQuery {
  agent_id: string;
  /** Session-scoped budgets are answered only with one (default: the client's `sessionId`). `null`: none. */
  session_id?: string | null;
  /** User-scoped budgets are answered only with one (default: the client's `onBehalfOf`). `null`: none. */
  on_behalf_of?: string | null;
}

/** What is left this period of a budget that would apply (an item of `GET /v1/budgets/remaining`). */
export interface BudgetRemaining {
  policy_id: string;
  /** An ISO 4217 code, `tokens` or `calls`. */
  unit: string;
  scope: 'agent' | 'session' | 'user';
  limit: number;
  consumed: number;
  held: number;
  /** max(0, limit - consumed - held). */
  remaining: number;
  /** ISO 8601 UTC: when the period resets. */
  period_resets_at: string;
}

/** The answer of `POST /v1/decisions/preview`: what a decision would be now, nothing stored or held. */
export interface DecisionPreview {
  object: 'decision_preview';
  effect: DecisionEffect;
  reason: string;
  policy_id: string | null;
  matched_policy_ids: string[];
  warnings: DecisionWarning[];
}

/** The answer of `POST /v1/actions/possible`. */
export interface PossibleActions {
  object: 'list';
  data: Array<{ action: string; possible: boolean }>;
}

/** Per-call options of every client method. */
export interface RequestOptions {
  /** Aborts the call (and its retries); the call then throws `client.aborted`. */
  signal?: AbortSignal;
  /** Time limit of each attempt in ms; defaults to the client's `timeoutMs`. */
  timeoutMs?: number;
  /** The `Idempotency-Key` of a POST; default a random key per call, shared by its retries. */
  idempotencyKey?: string;
}
