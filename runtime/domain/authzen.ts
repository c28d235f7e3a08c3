/**
 * The OpenID AuthZEN Authorization API 1.0 as another door into the decision
 * service (contract: "AuthZEN (for gateways that speak the standard)"). An
 * evaluation's subject, action, resource and context become a decision request
 * and DecisionService.decide makes the decision like any other: stored, rate
 * limited, budgeted, with its events. Pure mapping functions, then the two
 * calls: one evaluation, a batch of them.
 *
 * Mapping: `agent_id` = `subject.id`; `action` = `action.name` (the action
 * grammar applies: 400 validation.invalid_action); `resource` =
 * `"<type>:<id>"`; `amount` = `context.amount` when it is a number; the
 * decision's `context` = the request's `context` with `subject`, `action` and
 * `resource` set to their `properties` ({} when none). `options` is ignored.
 */
import { ApiError, InvalidFieldError, MissingFieldError } from '../errors/api-error.js';
import { where } from '../shared/storable.js';
import type { DecisionRow } from '../store/decisions.js';
import type { Principal } from '../tenant.js';
import type { DecisionInput } from './decisions.js';

type Json = Record<string, unknown>;

export interface AuthzenSubject {
  type: string;
  id: string;
  properties?: Json;
}
export interface AuthzenAction {
  name: string;
  properties?: Json;
}
export interface AuthzenResource {
  type: string;
  id: string;
  properties?: Json;
}
/** One access evaluation (the body of POST /access/v1/evaluation). */
export interface AuthzenEvaluation {
  subject: AuthzenSubject;
  action: AuthzenAction;
  resource: AuthzenResource;
  context?: Json | null;
  options?: Json;
}
/** The body of POST /access/v1/evaluations: defaults, then the entries. */
export interface AuthzenEvaluations {
  subject?: AuthzenSubject;
  action?: AuthzenAction;
  resource?: AuthzenResource;
  context?: Json | null;
  options?: Json;
  evaluations?: unknown[];
}

/** What the decision API allows: agent ids up to 256 characters, resources up to 1024. */
export const MAX_AGENT_ID_LENGTH = 256;
export const MAX_RESOURCE_LENGTH = 1024;
/** `session_id` and `on_behalf_of` (contract: Spend controls for agent runs). */
export const MAX_RUN_FIELD_LENGTH = 256;

/** The one call of the decision service this module makes (DecisionService.decide). */
export interface Decider {
  decide(principal: Principal, input: DecisionInput): Promise<DecisionRow>;
}

export interface AuthzenDeps {
  decisions: Decider;
  /** Told of every decision made, with its duration (the service metrics). */
  decided?: (row: DecisionRow, seconds: number) => void;
}

/** An entry of a batch: its decision, or the error that stopped it (answered as `decision: false`). */
export type BatchOutcome = { decision: DecisionRow } | { error: ApiError };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks an object's fields: required strings (with lengths), optional `properties`, nothing else. */
function readEntity(value: unknown, at: string, strings: Record<string, { max?: number; min?: number }>): Json {
  if (value === undefined || value === null) throw new MissingFieldError(`${where('body', at)} is required`, { details: [{ path: at, message: `${where('body', at)} is required` }] });
  if (!isObject(value)) throw invalid(at, 'must be object');
  for (const key of Object.keys(value)) {
    if (key !== 'properties' && !(key in strings)) throw invalid(`${at}/${key}`, '', `unknown field ${where('body', `${at}/${key}`)}`);
  }
  for (const [key, { min, max }] of Object.entries(strings)) {
    const path = `${at}/${key}`;
    const v = value[key];
    if (v === undefined) throw new MissingFieldError(`${where('body', path)} is required`, { details: [{ path, message: `${where('body', path)} is required` }] });
    if (typeof v !== 'string') throw invalid(path, 'must be string');
    if (min !== undefined && v.length < min) throw invalid(path, `must NOT have fewer than ${min} characters`);
    if (max !== undefined && v.length > max) throw invalid(path, `must NOT have more than ${max} characters`);
  }
  if (value.properties !== undefined && !isObject(value.properties)) throw invalid(`${at}/properties`, 'must be object');
  return value;
}

function invalid(path: string, problem: string, message = `${where('body', path)} ${problem}`): InvalidFieldError {
  return new InvalidFieldError(message, { details: [{ path, message }] });
}

/**
 * Checks one evaluation's shape, as the route schema does for a single one
 * (a batch entry is checked here, on its own). `at` is the JSON pointer of the
 * evaluation in the body, for messages and details.
 *
 * @throws MissingFieldError (validation.missing_field) or InvalidFieldError (validation.invalid_field)
 * @example
 * readEvaluation({ subject: { type: 'agent', id: 'bot' }, action: { name: 'orders.read' }, resource: { type: 'order', id: '1' } });
 * readEvaluation({ action: { name: 'orders.read' } }, '/evaluations/2'); // throws: evaluations[2].subject is required
 */
export function readEvaluation(value: unknown, at = ''): AuthzenEvaluation {
  if (!isObject(value)) throw invalid(at || '/', 'must be object', `${where('body', at)} must be object`);
  const allowed = new Set(['subject', 'action', 'resource', 'context', 'options']);
  for (const key of Object.keys(value)) if (!allowed.has(key)) throw invalid(`${at}/${key}`, '', `unknown field ${where('body', `${at}/${key}`)}`);
  readEntity(value.subject, `${at}/subject`, { type: { min: 1, max: 256 }, id: { min: 1, max: MAX_AGENT_ID_LENGTH } });
  readEntity(value.action, `${at}/action`, { name: {} });
  readEntity(value.resource, `${at}/resource`, { type: { min: 1, max: 256 }, id: { min: 1, max: MAX_RESOURCE_LENGTH } });
  if (value.context !== undefined && value.context !== null && !isObject(value.context)) throw invalid(`${at}/context`, 'must be object');
  if (value.options !== undefined && !isObject(value.options)) throw invalid(`${at}/options`, 'must be object');
  return value as unknown as AuthzenEvaluation;
}

/**
 * A batch entry with the request's defaults: each of `subject`, `action`,
 * `resource` and `context` the entry names replaces the default whole (the
 * AuthZEN "default values" rule; no merging inside them).
 *
 * @example
 * withDefaults({ subject: { type: 'agent', id: 'bot' }, action: { name: 'orders.read' } }, { resource: { type: 'order', id: '1' } });
 * // => { subject: { type: 'agent', id: 'bot' }, action: { name: 'orders.read' }, resource: { type: 'order', id: '1' } }
 */
export function withDefaults(defaults: AuthzenEvaluations, entry: unknown): unknown {
  if (!isObject(entry)) return entry;
  const merged: Json = {};
  for (const key of ['subject', 'action', 'resource', 'context'] as const) {
    const value = key in entry ? entry[key] : defaults[key];
    if (value !== undefined) merged[key] = value;
  }
  for (const [key, value] of Object.entries(entry)) if (!(key in merged)) merged[key] = value;
  return merged;
}

/**
 * `session_id` and `on_behalf_of` of the contract's "Spend controls for agent
 * runs", taken from the request's context when they are strings.
 *
 * @throws InvalidFieldError when one is longer than 256 characters
 * @example
 * runFields({ session_id: 'run_42', on_behalf_of: 7 }); // => { session_id: 'run_42' }
 */
export function runFields(context: Json | null | undefined, at = ''): { session_id?: string; on_behalf_of?: string } {
  const out: { session_id?: string; on_behalf_of?: string } = {};
  for (const key of ['session_id', 'on_behalf_of'] as const) {
    const value = context?.[key];
    if (typeof value !== 'string' || value === '') continue;
    if (value.length > MAX_RUN_FIELD_LENGTH) throw invalid(`${at}/context/${key}`, `must NOT have more than ${MAX_RUN_FIELD_LENGTH} characters`);
    out[key] = value;
  }
  return out;
}

/**
 * The decision request of a (checked) evaluation.
 *
 * @throws InvalidFieldError when the resource is too long, `context.amount` is negative, or a run field is too long
 * @example
 * toDecisionInput({ subject: { type: 'agent', id: 'bot', properties: { team: 'support' } }, action: { name: 'payments.refund' },
 *   resource: { type: 'order', id: '1001' }, context: { amount: 20, channel: 'chat' } });
 * // => { agent_id: 'bot', action: 'payments.refund', resource: 'order:1001', amount: 20,
 * //      context: { amount: 20, channel: 'chat', subject: { team: 'support' }, action: {}, resource: {} } }
 */
export function toDecisionInput(evaluation: AuthzenEvaluation, at = ''): DecisionInput {
  const { subject, action, resource } = evaluation;
  const context = evaluation.context ?? {};
  const resourceName = `${resource.type}:${resource.id}`;
  if (resourceName.length > MAX_RESOURCE_LENGTH) throw invalid(`${at}/resource`, `"<type>:<id>" must NOT have more than ${MAX_RESOURCE_LENGTH} characters`);
  const amount = typeof context.amount === 'number' ? context.amount : undefined;
  if (amount !== undefined && amount < 0) throw invalid(`${at}/context/amount`, 'must be >= 0');
  const run = runFields(context, at);
  const input: DecisionInput = {
    agent_id: subject.id,
    action: action.name,
    resource: resourceName,
    ...(amount !== undefined ? { amount } : {}),
    context: { ...context, subject: subject.properties ?? {}, action: action.properties ?? {}, resource: resource.properties ?? {} },
  };
  return { ...input, ...run };
}

async function decideOne(deps: AuthzenDeps, principal: Principal, input: DecisionInput): Promise<DecisionRow> {
  const started = performance.now();
  const row = await deps.decisions.decide(principal, input);
  deps.decided?.(row, (performance.now() - started) / 1000);
  return row;
}

/**
 * POST /access/v1/evaluation: one decision. Errors are thrown as for
 * POST /v1/decisions (400, 429, 503).
 *
 * @example
 * const row = await evaluate({ decisions }, principal, { subject: { type: 'agent', id: 'bot' },
 *   action: { name: 'orders.read' }, resource: { type: 'order', id: '1001' } });
 */
export function evaluate(deps: AuthzenDeps, principal: Principal, evaluation: AuthzenEvaluation): Promise<DecisionRow> {
  return decideOne(deps, principal, toDecisionInput(readEvaluation(evaluation)));
}

/**
 * POST /access/v1/evaluations: each entry (with the request's defaults) decided
 * in order, one after another (so rate limits and budgets apply in the order
 * given). An entry refused with a 4xx error (bad input, a rate limit) is
 * answered with its error and the others still count; a store failure (5xx)
 * fails the whole request, fail-closed.
 *
 * @example
 * const outcomes = await evaluateBatch({ decisions }, principal, { subject: { type: 'agent', id: 'bot' },
 *   action: { name: 'orders.read' }, evaluations: [{ resource: { type: 'order', id: '1' } }, { resource: { type: 'order', id: '2' } }] });
 */
export async function evaluateBatch(deps: AuthzenDeps, principal: Principal, request: AuthzenEvaluations & { evaluations: unknown[] }): Promise<BatchOutcome[]> {
  const outcomes: BatchOutcome[] = [];
  for (const [i, entry] of request.evaluations.entries()) {
    const at = `/evaluations/${i}`;
    try {
      const input = toDecisionInput(readEvaluation(withDefaults(request, entry), at), at);
      outcomes.push({ decision: await decideOne(deps, principal, input) });
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) outcomes.push({ error });
      else throw error;
    }
  }
  return outcomes;
}
