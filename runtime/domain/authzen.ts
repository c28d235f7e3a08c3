/**
 * The OpenID AuthZEN Authorization API 1.0 as another door into the decision
 * service (docs/api.md#authzen and the
 * third part's "AuthZEN, interoperable"). An evaluation's subject, action,
 * resource and context become a decision request and DecisionService.decide
 * makes the decision like any other: stored, rate limited, budgeted, with its
 * events. Pure mapping functions, then the two calls: one evaluation, a batch.
 *
 * Mapping: `agent_id` = `subject.id`; `action` = `action.name` when it fits the
 * action grammar, else `authzen.<name>` (authzenAction); `resource` =
 * `"<type>:<id>"`; `amount` = `context.amount` when it is a number; the
 * decision's `context` = the request's `context` with `subject` and `resource`
 * set to their `properties` ({} when none) and `action` to the action's
 * properties plus `name`, the name as sent. Members the API does not define
 * are ignored at every level, as AuthZEN says receivers must.
 */
import { authzenActionOf, MAX_AUTHZEN_ACTION_NAME } from '../../compiler/index.js';
import { ApiError, InvalidActionError, InvalidFieldError, MissingFieldError } from '../errors/api-error.js';
import { where } from '../shared/storable.js';
import type { AuthzenEvaluationRequest, AuthzenEvaluationsRequest } from '../../clients/typescript/wire.js';
import type { DecisionRow } from '../store/decisions.js';
import type { Principal } from '../tenant.js';
import { permits } from './decision-state.js';
import type { DecisionInput } from './decisions.js';

type Json = Record<string, unknown>;

/** One access evaluation: the body of POST /access/v1/evaluation (generated from schemas/api/authzen-evaluation.schema.json), as readEvaluation reads it. */
export type AuthzenEvaluation = AuthzenEvaluationRequest;
/** The body of POST /access/v1/evaluations (generated from schemas/api/authzen-evaluations.schema.json): defaults, then the entries. */
export type AuthzenEvaluations = AuthzenEvaluationsRequest;

/** What the decision API allows: agent ids up to 256 characters, resources up to 1024. */
export const MAX_AGENT_ID_LENGTH = 256;
export const MAX_RESOURCE_LENGTH = 1024;
/** `session_id` and `on_behalf_of` (docs/budgets-and-limits.md#spend-controls-for-agent-runs). */
export const MAX_RUN_FIELD_LENGTH = 256;

/** The one call of the decision service this module makes (DecisionService.decide). */
export interface Decider {
  decide(principal: Principal, input: DecisionInput): Promise<DecisionRow>;
}

/** Approvals at `context.approval` of a re-evaluation (domain/access-requests.ts): the approved decision, or null to decide. */
export interface ApprovalUser {
  useApproval(principal: Principal, input: DecisionInput): Promise<DecisionRow | null>;
}

export interface AuthzenDeps {
  decisions: Decider;
  /** Applies an approval a re-evaluation carries (absent: `context.approval` is only context). */
  approvals?: ApprovalUser;
  /** Told of every decision made, with its duration (the service metrics). */
  decided?: (row: DecisionRow, seconds: number) => void;
}

/** An entry of a batch: its decision, or the error that stopped it (answered as `decision: false`). */
export type BatchOutcome = { decision: DecisionRow } | { error: ApiError };

/** A JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks an AuthZEN object (subject, action, resource): required strings (with
 * lengths), optional `properties`; other members are dropped.
 *
 * @throws MissingFieldError or InvalidFieldError, naming `at`
 * @example
 * readEntity({ type: 'user', id: 'u1', _note: 1 }, '/subject', { type: { min: 1 }, id: { min: 1 } }); // => { type: 'user', id: 'u1' }
 */
export function readEntity(value: unknown, at: string, strings: Record<string, { max?: number; min?: number }>): Json {
  if (value === undefined || value === null)
    throw new MissingFieldError(`${where('body', at)} is required`, {
      details: [{ path: at, message: `${where('body', at)} is required` }],
    });
  if (!isObject(value)) throw invalid(at, 'must be object');
  for (const [key, { min, max }] of Object.entries(strings)) {
    const path = `${at}/${key}`;
    const v = value[key];
    if (v === undefined)
      throw new MissingFieldError(`${where('body', path)} is required`, {
        details: [{ path, message: `${where('body', path)} is required` }],
      });
    if (typeof v !== 'string') throw invalid(path, 'must be string');
    if (min !== undefined && v.length < min) throw invalid(path, `must NOT have fewer than ${min} characters`);
    if (max !== undefined && v.length > max) throw invalid(path, `must NOT have more than ${max} characters`);
  }
  if (value.properties !== undefined && !isObject(value.properties))
    throw invalid(`${at}/properties`, 'must be object');
  const entity: Json = {};
  for (const key of Object.keys(strings)) entity[key] = value[key];
  if (value.properties !== undefined) entity.properties = value.properties;
  return entity;
}

/** validation.invalid_field for the member at `path` (a JSON pointer). */
export function invalid(
  path: string,
  problem: string,
  message = `${where('body', path)} ${problem}`,
): InvalidFieldError {
  return new InvalidFieldError(message, { details: [{ path, message }] });
}

/**
 * Checks one evaluation's shape, as the route schema does for a single one
 * (a batch entry is checked here, on its own), and keeps only the members
 * AuthZEN defines (`_note` or any other member is ignored, at every level).
 * `at` is the JSON pointer of the evaluation in the body, for messages and details.
 *
 * @throws MissingFieldError (validation.missing_field) or InvalidFieldError (validation.invalid_field)
 * @example
 * readEvaluation({ subject: { type: 'agent', id: 'bot', _note: 'x' }, action: { name: 'orders.read' }, resource: { type: 'order', id: '1' } });
 * // => { subject: { type: 'agent', id: 'bot' }, action: { name: 'orders.read' }, resource: { type: 'order', id: '1' } }
 * readEvaluation({ action: { name: 'orders.read' } }, '/evaluations/2'); // throws: evaluations[2].subject is required
 */
export function readEvaluation(value: unknown, at = ''): AuthzenEvaluation {
  if (!isObject(value)) throw invalid(at || '/', 'must be object', `${where('body', at)} must be object`);
  const evaluation = {
    subject: readEntity(value.subject, `${at}/subject`, {
      type: { min: 1, max: 256 },
      id: { min: 1, max: MAX_AGENT_ID_LENGTH },
    }),
    action: readEntity(value.action, `${at}/action`, { name: {} }),
    resource: readEntity(value.resource, `${at}/resource`, {
      type: { min: 1, max: 256 },
      id: { min: 1, max: MAX_RESOURCE_LENGTH },
    }),
  } as unknown as AuthzenEvaluation;
  if (value.context !== undefined && value.context !== null && !isObject(value.context))
    throw invalid(`${at}/context`, 'must be object');
  if (value.options !== undefined && !isObject(value.options)) throw invalid(`${at}/options`, 'must be object');
  // A null context (which a batch entry may carry) is no context.
  if (value.context !== undefined && value.context !== null) evaluation.context = value.context as Json;
  if (value.options !== undefined) evaluation.options = value.options as Json;
  return evaluation;
}

/**
 * The decision's action for an AuthZEN action name, by the compiler's rule
 * (`authzenActionOf`, shared with the MCP proxy): the name itself when it
 * fits the action grammar (namespace.verb), else `authzen.` + the name
 * lower-cased with every character outside [a-z0-9_] replaced by `_`, with
 * `t_` in front when it does not start with a letter.
 *
 * @throws InvalidActionError when the name is longer than 200 characters
 * @example
 * authzenAction('orders.read');      // => 'orders.read'
 * authzenAction('can_read_user');    // => 'authzen.can_read_user'
 * authzenAction('GET');              // => 'authzen.get'
 * authzenAction('documents/read');   // => 'authzen.documents_read'
 * authzenAction('2fa.verify');       // => 'authzen.t_2fa_verify'
 */
export function authzenAction(name: string, at = ''): string {
  const action = authzenActionOf(name);
  if (action === undefined) {
    const message = `${where('body', `${at}/action/name`)} must NOT have more than ${MAX_AUTHZEN_ACTION_NAME} characters`;
    throw new InvalidActionError(message, { details: [{ path: `${at}/action/name`, message }] });
  }
  return action;
}

/** `options.evaluations_semantic` of a batch (AuthZEN 1.0). */
export type EvaluationsSemantic = 'execute_all' | 'deny_on_first_deny' | 'permit_on_first_permit';
const SEMANTICS: readonly EvaluationsSemantic[] = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'];

/**
 * The batch's semantic from its `options` (execute_all when not given).
 *
 * @throws InvalidFieldError for any other value
 * @example
 * evaluationsSemantic({ evaluations_semantic: 'deny_on_first_deny' }); // => 'deny_on_first_deny'
 * evaluationsSemantic(undefined);                                       // => 'execute_all'
 */
export function evaluationsSemantic(options: unknown): EvaluationsSemantic {
  const value = isObject(options) ? options.evaluations_semantic : undefined;
  if (value === undefined) return 'execute_all';
  if (typeof value === 'string' && (SEMANTICS as readonly string[]).includes(value))
    return value as EvaluationsSemantic;
  const message = `options.evaluations_semantic must be one of ${SEMANTICS.join(', ')}`;
  throw new InvalidFieldError(message, { details: [{ path: '/options/evaluations_semantic', message }] });
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
 * `session_id` and `on_behalf_of` of docs/budgets-and-limits.md#spend-controls-for-agent-runs, taken from the request's context when they are strings.
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
    if (value.length > MAX_RUN_FIELD_LENGTH)
      throw invalid(`${at}/context/${key}`, `must NOT have more than ${MAX_RUN_FIELD_LENGTH} characters`);
    out[key] = value;
  }
  return out;
}

/**
 * The decision request of a (checked) evaluation.
 *
 * @throws InvalidFieldError when the resource is too long, `context.amount` is negative, or a run field is too long;
 *   InvalidActionError when the action's name is longer than 200 characters
 * @example
 * toDecisionInput({ subject: { type: 'user', id: 'bot', properties: { team: 'support' } }, action: { name: 'can_read_todos' },
 *   resource: { type: 'todo', id: '1001' }, context: { amount: 20, channel: 'chat' } });
 * // => { agent_id: 'bot', action: 'authzen.can_read_todos', resource: 'todo:1001', amount: 20,
 * //      context: { amount: 20, channel: 'chat', subject: { team: 'support' }, action: { name: 'can_read_todos' }, resource: {} } }
 */
export function toDecisionInput(evaluation: AuthzenEvaluation, at = ''): DecisionInput {
  const { subject, action, resource } = evaluation;
  const context = evaluation.context ?? {};
  const resourceName = `${resource.type}:${resource.id}`;
  if (resourceName.length > MAX_RESOURCE_LENGTH)
    throw invalid(`${at}/resource`, `"<type>:<id>" must NOT have more than ${MAX_RESOURCE_LENGTH} characters`);
  const amount = typeof context.amount === 'number' ? context.amount : undefined;
  if (amount !== undefined && amount < 0) throw invalid(`${at}/context/amount`, 'must be >= 0');
  const run = runFields(context, at);
  const input: DecisionInput = {
    agent_id: subject.id,
    action: authzenAction(action.name, at),
    resource: resourceName,
    ...(amount !== undefined ? { amount } : {}),
    // The name as sent replaces a property called `name`.
    context: {
      ...context,
      subject: subject.properties ?? {},
      action: { ...action.properties, name: action.name },
      resource: resource.properties ?? {},
    },
  };
  return { ...input, ...run };
}

async function decideOne(deps: AuthzenDeps, principal: Principal, input: DecisionInput): Promise<DecisionRow> {
  // An approval that applies answers with its approved decision: no new one is made.
  const approved = await deps.approvals?.useApproval(principal, input);
  if (approved) return approved;
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
 * answered with its error and counts as a deny; the others still count. A
 * store failure (5xx) fails the whole request, fail-closed. With
 * `deny_on_first_deny` (`permit_on_first_permit`) the entries after the first
 * deny (permit) are not decided: the outcomes end with the one that stopped them.
 *
 * @throws InvalidFieldError for an unknown `options.evaluations_semantic`
 * @example
 * const outcomes = await evaluateBatch({ decisions }, principal, { subject: { type: 'agent', id: 'bot' },
 *   action: { name: 'orders.read' }, evaluations: [{ resource: { type: 'order', id: '1' } }, { resource: { type: 'order', id: '2' } }] });
 */
export async function evaluateBatch(
  deps: AuthzenDeps,
  principal: Principal,
  request: AuthzenEvaluations & { evaluations: unknown[] },
): Promise<BatchOutcome[]> {
  const semantic = evaluationsSemantic(request.options);
  const outcomes: BatchOutcome[] = [];
  for (const [i, entry] of request.evaluations.entries()) {
    const at = `/evaluations/${i}`;
    let outcome: BatchOutcome;
    try {
      const input = toDecisionInput(readEvaluation(withDefaults(request, entry), at), at);
      outcome = { decision: await decideOne(deps, principal, input) };
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) outcome = { error };
      else throw error;
    }
    outcomes.push(outcome);
    const permitted = 'decision' in outcome && permits(outcome.decision);
    if ((semantic === 'deny_on_first_deny' && !permitted) || (semantic === 'permit_on_first_permit' && permitted))
      break;
  }
  return outcomes;
}
