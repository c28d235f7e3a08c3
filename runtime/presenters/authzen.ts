/** The AuthZEN answers (contract: "AuthZEN (for gateways that speak the standard)"). */
import { permits } from '../domain/authzen.js';
import type { ApiError } from '../errors/api-error.js';
import type { DecisionRow } from '../store/decisions.js';

export interface AuthzenAnswer {
  /** True for allow and review (not while awaiting approval), false for deny and for a batch entry that failed. */
  decision: boolean;
  context:
    | { id: string; effect: DecisionRow['effect']; reason: string; permit_token?: string; status?: 'awaiting_approval' }
    | { error: { code: string; message: string } };
}

/**
 * A decision as an AuthZEN evaluation answer; the permit token only when there is one.
 *
 * @example
 * authzenAnswer(row); // => { decision: true, context: { id: 'dec_...', effect: 'review', reason: 'policy.matched', permit_token: 'eyJ...' } }
 */
export function authzenAnswer(row: DecisionRow): AuthzenAnswer {
  // A review decision awaiting a human's approval is not (yet) a permission.
  const awaiting = row.status === 'awaiting_approval';
  return {
    decision: permits(row),
    context: {
      id: row.id,
      effect: row.effect,
      reason: row.reason,
      ...(row.permit_token ? { permit_token: row.permit_token } : {}),
      ...(awaiting ? { status: 'awaiting_approval' as const } : {}),
    },
  };
}

/**
 * A batch entry that could not be decided: closed, with the error's code and message.
 *
 * @example
 * authzenFailure(new InvalidActionError('...')); // => { decision: false, context: { error: { code: 'validation.invalid_action', message: '...' } } }
 */
export function authzenFailure(error: ApiError): AuthzenAnswer {
  return { decision: false, context: { error: { code: error.code, message: error.message } } };
}

/**
 * GET /.well-known/authzen-configuration: the PDP metadata, from the service's base URL (AUTHZ_BASE_URL).
 *
 * @example
 * authzenConfiguration('https://authz.example.com');
 * // => { policy_decision_point: 'https://authz.example.com', access_evaluation_endpoint: 'https://authz.example.com/access/v1/evaluation', ... }
 */
export function authzenConfiguration(baseUrl: string): Record<string, string | string[]> {
  return {
    policy_decision_point: baseUrl,
    access_evaluation_endpoint: `${baseUrl}/access/v1/evaluation`,
    access_evaluations_endpoint: `${baseUrl}/access/v1/evaluations`,
    // Resource search is not offered (the service does not know the resources): absent, as AuthZEN reads it.
    search_subject_endpoint: `${baseUrl}/access/v1/search/subject`,
    search_action_endpoint: `${baseUrl}/access/v1/search/action`,
    capabilities: [],
  };
}
