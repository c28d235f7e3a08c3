/**
 * The request and answer bodies of the decision routes, as the service's
 * schemas define them: the requests generated from schemas/api/*.schema.json
 * (decision-request, decision-resolve, decision-output, session-labels,
 * budget-remaining-query), the answers from schemas/api/answers/, both into
 * ./wire.ts (`npm run gen:types`) and re-exported or named here.
 * test/clients/typescript-client.test.ts checks these against the schemas and
 * against real answers, so a field added on one side and not the other fails.
 */
import type {
  ActionsPossible,
  BudgetRemainingQuery,
  Decision,
  DecisionOutputRequest,
  DecisionRequest,
  DecisionResolveRequest,
  Review,
  SessionLabelsRequest,
} from './wire.js';

/**
 * `POST /v1/decisions` body (schemas/api/decision-request.schema.json): the generated type. Its `session_id` and
 * `on_behalf_of` left out take the client's `sessionId` and `onBehalfOf`; `null` sends none, overriding them.
 */
export type { DecisionRequest } from './wire.js';

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
export type {
  Decision,
  DecisionWarning,
  BudgetRemaining,
  DecisionPreview,
  DecisionOutput,
  DecisionOutputFinding,
  Session,
  SessionLabel,
} from './wire.js';

export type DecisionEffect = Decision['effect'];

/** `awaiting_approval` only for review policies that require approval first (docs/reviews.md#the-rules). */
export type DecisionStatus = Decision['status'];

/** A human's verdict on a review decision (docs/reviews.md#the-rules): the Review wire type. */
export type DecisionReview = Review;

/** `POST /v1/decisions/:id/confirm` body (schemas/api/decision-resolve.schema.json): the amount, or amounts per held unit, actually spent; a unit not named confirms its held amount. */
export type ConfirmOptions = DecisionResolveRequest;

/** `POST /v1/decisions/:id/output` body (schemas/api/decision-output.schema.json): what a gateway read in a result. */
export type DecisionOutputInput = DecisionOutputRequest;

/** `T` with the fields `K`, which the client fills from its defaults when left out, also taking `null`: none, overriding the default. */
type DefaultedByClient<T, K extends keyof T> = Omit<T, K> & { [P in K]?: T[P] | null };

/**
 * Whose budgets `budgetsRemaining` asks about (`GET /v1/budgets/remaining`, schemas/api/budget-remaining-query.schema.json):
 * session- and user-scoped budgets are answered only with `session_id` and `on_behalf_of` (default: the client's
 * `sessionId` and `onBehalfOf`; `null`: none).
 */
export type RemainingQuery = DefaultedByClient<BudgetRemainingQuery, 'session_id' | 'on_behalf_of'>;

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

/**
 * `addLabels`: labels for a session (`POST /v1/sessions/:session_id/labels`, extension; the body is
 * schemas/api/session-labels.schema.json), and the session they join (the path; default: the client's `sessionId`).
 */
export type LabelsInput = SessionLabelsRequest & { session_id?: string };
