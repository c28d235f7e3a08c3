/**
 * The AuthZEN answers (contract: "AuthZEN (for gateways that speak the
 * standard)", and the third part's "Access requests": requestable denials,
 * tasks, approvals).
 */
import { permits, taskStatus, type TaskStatus } from '../domain/decision-state.js';
import type { ApiError } from '../errors/api-error.js';
import type { DecisionRow } from '../store/decisions.js';
import type { ReplayableAnswer } from './decision.js';

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

/** The answers of a body: the one evaluation, or each of a batch. */
const answersOf = (body: { evaluations?: AuthzenAnswer[] } & Partial<AuthzenAnswer>): AuthzenAnswer[] => body.evaluations ?? [body as AuthzenAnswer];

/**
 * The form of an evaluation's (or a batch's) answer an Idempotency-Key
 * stores: every `permit_token` left out (a bearer credential is stored nowhere).
 *
 * @example
 * authzenAnswerToStore('{"decision":true,"context":{"id":"dec_1","permit_token":"eyJ..."}}'); // => '{"decision":true,"context":{"id":"dec_1"}}'
 */
export function authzenAnswerToStore(text: string): string {
  const body = JSON.parse(text) as { evaluations?: AuthzenAnswer[] };
  for (const answer of answersOf(body)) if ('permit_token' in answer.context) delete answer.context.permit_token;
  return JSON.stringify(body);
}

/**
 * An evaluation's (or a batch's) stored answer, for a replay: each answer
 * with `decision: true` and a decision id carries a permit; a fresh token is
 * set where one is signed.
 *
 * @example
 * const answer = replayableAuthzenAnswer(stored);
 * answer.withPermits(await decisions.replayPermits(principal, answer.permitIds));
 */
export function replayableAuthzenAnswer(stored: string): ReplayableAnswer {
  const body = JSON.parse(stored) as { evaluations?: AuthzenAnswer[] };
  const holders = answersOf(body).filter((a): a is AuthzenAnswer & { context: DecisionContext } => 'id' in a.context && a.decision);
  return {
    permitIds: holders.map((a) => a.context.id),
    withPermits(tokens) {
      holders.forEach((a, i) => {
        const token = tokens[i];
        if (token) a.context.permit_token = token;
      });
      return JSON.stringify(body);
    },
  };
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
