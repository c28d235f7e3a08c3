/**
 * agent-authz/client: the TypeScript client of the decision API.
 *
 * @example
 * import { AuthzClient, DecisionDeniedError, AuthzError } from 'agent-authz/client';
 * const authz = new AuthzClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'svc_test_sk_...' });
 * const out = await authz.guard({ agent_id: 'bot-1', action: 'orders.read' }, async (decision) => readOrders());
 */
export { AuthzClient, type AuthzClientOptions, type ClientRetryEvent } from './client.js';
export { AuthzError, DecisionDeniedError, CLIENT_ERROR_CODES, type ErrorDetail } from './errors.js';
export type { FetchLike } from './http.js';
export type {
  BudgetRemaining,
  ConfirmOptions,
  Decision,
  DecisionEffect,
  DecisionInput,
  DecisionPreview,
  DecisionRequest,
  DecisionRequestExtensions,
  DecisionReview,
  DecisionStatus,
  DecisionWarning,
  LabelsInput,
  PossibleActions,
  RemainingQuery,
  RequestOptions,
  Session,
  SessionLabel,
} from './types.js';
