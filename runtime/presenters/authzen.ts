/**
 * The AuthZEN answers (docs/api.md#authzen, and
 * docs/api.md#access-requests-for-approvals: requestable denials,
 * tasks, approvals).
 */
import { taskStatus, type TaskStatus } from '../domain/access-requests.js';
import { permits } from '../domain/authzen.js';
import type { ApiError } from '../errors/api-error.js';
import type { DecisionRow } from '../store/decisions.js';

/** An approval as the profile names it: the approved decision, when, and until when it may be used. */
export interface ApprovalObject {
  id: string;
  approved_at: string | null;
  approved_until: string;
}

/** A decision's AuthZEN context. */
export interface DecisionContext {
  id: string;
  effect: DecisionRow['effect'];
  /** The stored reason; `approval_required` for a requestable denial (the decision's stored reason stays policy.matched). */
  reason: string;
  permit_token?: string;
  status?: 'awaiting_approval';
  /** A requestable denial: the decision's id (`denial.evaluation_id` of the access request). */
  evaluation_id?: string;
  /** A requestable denial: where to submit the access request, and until when (the approval deadline). */
  access_request?: { endpoint: string; expires_at: string };
  /** The approval a re-evaluation used (its decision answers). */
  approval?: ApprovalObject;
}

export interface AuthzenAnswer {
  /** True for allow and review (not while awaiting approval), false for deny and for a batch entry that failed. */
  decision: boolean;
  context: DecisionContext | { error: { code: string; message: string } };
}

/** POST /access/v1/requests, on AUTHZ_BASE_URL. */
export const accessRequestEndpoint = (baseUrl: string): string => `${baseUrl}/access/v1/requests`;

/** An approved decision's approval object (`approved_until`: the decision's expiry). */
export function approvalObject(row: DecisionRow): ApprovalObject {
  return { id: row.id, approved_at: row.reviewed_at ? row.reviewed_at.toISOString() : null, approved_until: row.expires_at.toISOString() };
}

/**
 * A decision as an AuthZEN evaluation answer; the permit token only when there
 * is one. A review awaiting approval is a requestable denial (`decision:
 * false`, `reason: approval_required`, `evaluation_id`, `access_request`); an
 * approved decision answered for a re-evaluation carries its `approval`.
 *
 * @example
 * authzenAnswer(row, 'https://authz.example.com'); // => { decision: true, context: { id: 'dec_...', effect: 'review', reason: 'policy.matched', permit_token: 'eyJ...' } }
 */
export function authzenAnswer(row: DecisionRow, baseUrl: string): AuthzenAnswer {
  // A review decision awaiting a human's approval is not (yet) a permission: it may be requested.
  const awaiting = row.status === 'awaiting_approval';
  const requestable = awaiting && row.approval_expires_at !== null;
  const approved = row.review_status === 'approved' && row.approval_expires_at !== null && !awaiting;
  return {
    decision: permits(row),
    context: {
      id: row.id,
      effect: row.effect,
      reason: requestable ? 'approval_required' : row.reason,
      ...(row.permit_token ? { permit_token: row.permit_token } : {}),
      ...(awaiting ? { status: 'awaiting_approval' as const } : {}),
      ...(requestable ? { evaluation_id: row.id, access_request: { endpoint: accessRequestEndpoint(baseUrl), expires_at: row.approval_expires_at!.toISOString() } } : {}),
      ...(approved ? { approval: approvalObject(row) } : {}),
    },
  };
}

/** The profile's task (GET /access/v1/requests/:id, POST /access/v1/requests), and its result once approved. */
export interface AccessTask {
  task: { id: string; status: TaskStatus; status_endpoint: string };
  result?: { mode: 'reevaluate'; approval: ApprovalObject };
}

/**
 * A decision an access request was submitted for, as the profile's task: its
 * id is the decision's; once approved, the approval to re-evaluate with.
 *
 * @example
 * accessTask(row, 'https://authz.example.com');
 * // => { task: { id: 'dec_...', status: 'approved', status_endpoint: 'https://authz.example.com/access/v1/requests/dec_...' },
 * //      result: { mode: 'reevaluate', approval: { id: 'dec_...', approved_at: '...', approved_until: '...' } } }
 */
export function accessTask(row: DecisionRow, baseUrl: string): AccessTask {
  const status = taskStatus(row);
  return {
    task: { id: row.id, status, status_endpoint: `${accessRequestEndpoint(baseUrl)}/${encodeURIComponent(row.id)}` },
    ...(status === 'approved' ? { result: { mode: 'reevaluate' as const, approval: approvalObject(row) } } : {}),
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
    access_request_endpoint: accessRequestEndpoint(baseUrl),
    capabilities: ['urn:openid:authzen:capability:access-request'],
  };
}
