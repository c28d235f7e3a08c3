/**
 * The request and answer bodies of the decision routes, as the service's
 * schemas define them (schemas/api/decision-request.schema.json,
 * schemas/api/decision-resolve.schema.json; the answers are the types
 * generated from schemas/api/answers/ into ./wire.ts, re-exported here).
 * test/clients/typescript-client.test.ts checks these against the schemas and
 * against real answers, so a field added on one side and not the other fails.
 */
import type { ActionsPossible, Decision, Review } from './wire.js';

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

/** The answers' wire types, generated from schemas/api/answers/ (clients/typescript/wire.ts; `npm run gen:types`). */
export type { Decision, DecisionWarning, BudgetRemaining, DecisionPreview, Session, SessionLabel } from './wire.js';

export type DecisionEffect = Decision['effect'];

/** `awaiting_approval` only for review policies that require approval first (docs/reviews.md#the-rules). */
export type DecisionStatus = Decision['status'];

/** A human's verdict on a review decision (docs/reviews.md#the-rules): the Review wire type. */
export type DecisionReview = Review;

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

/** The answer of `POST /v1/actions/possible`. */
export type PossibleActions = ActionsPossible;

/** Per-call options of every client method. */
export interface RequestOptions {
  /** Aborts the call (and its retries); the call then throws `client.aborted`. */
  signal?: AbortSignal;
  /** Time limit of each attempt in ms; defaults to the client's `timeoutMs`. */
  timeoutMs?: number;
  /** The `Idempotency-Key` of a POST; default a random key per call, shared by its retries. */
  idempotencyKey?: string;
}

/** `addLabels`: labels for a session (`POST /v1/sessions/:session_id/labels`, extension). */
export interface LabelsInput {
  /** 1 to 32 labels, each `[a-z][a-z0-9_.-]{0,63}`. */
  labels: string[];
  /** The agent whose tool found what the labels say. */
  agent_id: string;
  /** Default: the client's `sessionId`. */
  session_id?: string;
  /** Why, in words (`read /hr/salaries.csv`), kept with the labels it adds. */
  detail?: string | null;
}
