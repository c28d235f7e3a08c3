/**
 * The shared test kit: what many test files used to define for themselves.
 *
 * - `agent(tag)`: an agent id no other test of the run uses (`tag-N-xxxxxx`);
 * - `expectError(r, status, code)`: the answer is the error body of
 *   docs/errors.md (only `error`, with `code`, a non-empty `message`, a
 *   `request_id` echoed in the `request-id` header, and maybe `details`) with
 *   that status and code; returns the `error` object;
 * - `postDecision(rt, body, key?, headers?)`: `POST /v1/decisions` with the runtime's test key;
 * - `decide(rt, body, key?, headers?)`: the same, expected to answer 200; the parsed decision;
 * - `review(rt, key, id, verdict)`: a reviewer's verdict on a decision awaiting approval, expected to answer 200;
 * - `callerOf(app, key)`: a Caller over another app of the same store (a second process).
 *
 * @example
 *   const d = await decide(rt, { agent_id: agent('refund-bot'), action: 'payments.refund' });
 *   expect(d.effect).toBe('allow');
 *   expectError(await postDecision(rt, { action: 'x' }), 400, 'validation.invalid_field');
 */
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Decision } from '../../clients/typescript/wire.js';
import type { ErrorDetail } from '../../runtime/errors/api-error.js';

let seq = 0;

/** An agent id unique in the run: `${tag}-${n}-${six random base-36 characters}`. */
export function agent(tag: string): string {
  return `${tag}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The `error` object of an error answer. */
export interface ErrorAnswer {
  code: string;
  message: string;
  request_id: string;
  details?: ErrorDetail[];
}

const ERROR_KEYS = ['code', 'message', 'request_id', 'details'];

/** Checks an error answer (status, code, shape, request id header) and returns its `error`. */
export function expectError(r: LightMyRequestResponse, status: number, code: string): ErrorAnswer {
  expect(r.statusCode, r.body.slice(0, 500)).toBe(status);
  const body: unknown = r.json();
  expect(body).toBeTypeOf('object');
  expect(Object.keys(body as object)).toEqual(['error']);
  const error = (body as { error: ErrorAnswer }).error;
  expect(error.code).toBe(code);
  expect(error.message).toBeTypeOf('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.request_id).toMatch(/^req_[0-9A-Za-z]+$/);
  expect(r.headers['request-id']).toBe(error.request_id);
  for (const k of Object.keys(error)) expect(ERROR_KEYS).toContain(k);
  return error;
}

/** What the kit needs of a runtime under test (test/runtime/helpers/app.ts). */
export interface Caller {
  testKey: string;
  call(key: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
}

/** A Caller over `app` (e.g. a second process's app on the same store), with `key` as its test key. */
export function callerOf(
  app: { inject(options: InjectOptions): Promise<LightMyRequestResponse> },
  key: string,
): Caller {
  return {
    testKey: key,
    call: (k, options) =>
      app.inject({
        ...options,
        headers: { ...(k ? { authorization: `Bearer ${k}` } : {}), ...(options.headers ?? {}) },
      }),
  };
}

/** `POST /v1/decisions` with `body`, authenticated with `key` (default: the runtime's test key), and any other `headers`. */
export function postDecision(
  rt: Caller,
  body: object,
  key: string | null = rt.testKey,
  headers?: Record<string, string>,
): Promise<LightMyRequestResponse> {
  return rt.call(key, { method: 'POST', url: '/v1/decisions', payload: body, ...(headers ? { headers } : {}) });
}

/** A decision answer, parsed: the decision of docs/api.md#post-v1decisions, as the generated wire type has it. */
export type DecisionAnswer = Decision;

/** `POST /v1/decisions` that must answer 200; the decision. */
export async function decide(
  rt: Caller,
  body: object,
  key: string | null = rt.testKey,
  headers?: Record<string, string>,
): Promise<DecisionAnswer> {
  const r = await postDecision(rt, body, key, headers);
  expect(r.statusCode, r.body).toBe(200);
  return r.json() as DecisionAnswer;
}

/** `POST /v1/decisions/:id/review` by reviewer alice with a `reviews:write` key, that must answer 200. */
export async function review(
  rt: Caller,
  key: string,
  decisionId: string,
  verdict: 'approve' | 'deny',
): Promise<LightMyRequestResponse> {
  const r = await rt.call(key, {
    method: 'POST',
    url: `/v1/decisions/${decisionId}/review`,
    payload: { verdict, reviewer: 'alice' },
  });
  expect(r.statusCode, r.body).toBe(200);
  return r;
}

/** An event as `GET /v1/events` lists it (docs/webhooks-and-events.md#events), by the fields tests read. */
export interface EventItem {
  id: string;
  type: string;
  created_at: string;
  data: { decision: { id: string; action: string }; agent_id?: string };
}

/** A decision, review or agent as a list answer holds it, by the fields tests read. */
export interface ListedItem {
  id: string;
  status: string;
  agent_id: string;
  policy_id: string;
  evaluated_at: string;
}

/** One answer of `POST /access/v1/evaluations` (docs/api.md#post-accessv1evaluations). */
export interface EvaluationItem {
  decision: boolean;
  context: { id: string; effect: string; reason: string };
}
