/**
 * The AuthZEN answers (docs/api.md#authzen, and
 * docs/api.md#access-requests-for-approvals: requestable denials,
 * tasks, approvals).
 */
import { permits, taskStatus } from '../domain/decision-state.js';
import type { ApiError } from '../errors/api-error.js';
import type { DecisionRow } from '../store/decisions.js';
import type {
  AuthzenAnswer,
  AuthzenApproval,
  AuthzenConfiguration,
  AuthzenTask,
} from '../../clients/typescript/wire.js';
import type { ReplayableAnswer } from './decision.js';

export type { AuthzenAnswer };

/** A decision's AuthZEN context (the answer's context when it is not an error). */
type DecisionContext = Extract<AuthzenAnswer['context'], { id: string }>;

/** The answers of a body: the one evaluation, or each of a batch. */
const answersOf = (body: { evaluations?: AuthzenAnswer[] } & Partial<AuthzenAnswer>): AuthzenAnswer[] =>
  body.evaluations ?? [body as AuthzenAnswer];

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
  const holders = answersOf(body).filter(
    (a): a is AuthzenAnswer & { context: DecisionContext } => 'id' in a.context && a.decision,
  );
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
export function approvalObject(row: DecisionRow): AuthzenApproval {
  return {
    id: row.id,
    approved_at: row.reviewed_at ? row.reviewed_at.toISOString() : null,
    approved_until: row.expires_at.toISOString(),
  };
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
      ...(requestable
        ? {
            evaluation_id: row.id,
            access_request: {
              endpoint: accessRequestEndpoint(baseUrl),
              expires_at: row.approval_expires_at!.toISOString(),
            },
          }
        : {}),
      ...(approved ? { approval: approvalObject(row) } : {}),
    },
  };
}

/**
 * A decision an access request was submitted for, as the profile's task (GET
 * /access/v1/requests/:id, POST /access/v1/requests): its id is the
 * decision's; once approved, the result with the approval to re-evaluate with.
 *
 * @example
 * accessTask(row, 'https://authz.example.com');
 * // => { task: { id: 'dec_...', status: 'approved', status_endpoint: 'https://authz.example.com/access/v1/requests/dec_...' },
 * //      result: { mode: 'reevaluate', approval: { id: 'dec_...', approved_at: '...', approved_until: '...' } } }
 */
export function accessTask(row: DecisionRow, baseUrl: string): AuthzenTask {
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
export function authzenConfiguration(baseUrl: string): AuthzenConfiguration {
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
