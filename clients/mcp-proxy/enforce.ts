/**
 * What the proxy decides for each client request, whatever the transports
 * (docs/mcp.md#what-the-proxy-does):
 *
 * - `tools/call`: decided by the service first, every call (hidden tools
 *   included). A deny, a 429, an unreachable service, a call that cannot be
 *   mapped or a tool whose action collides becomes a tool result with
 *   `isError: true` and never reaches the upstream.
 * - `resources/read`, `resources/subscribe`, `prompts/get`,
 *   `completion/complete`, `logging/setLevel`: decided with the actions of
 *   methods.ts; refused with a JSON-RPC error (`-32001` with `error.data` for a
 *   deny or a 429, `-32603` when the service cannot be reached).
 * - Allowed (or a review, once approved): forwarded with the decision id and
 *   the permit in `_meta`; the relay confirms or rejects the decision after
 *   the upstream's answer has gone to the client (`settle`).
 * - Lists: tools this agent can never be allowed to call are hidden; the
 *   prompt and resource lists are empty when their action can never be allowed
 *   (`POST /v1/actions/possible`).
 */
import type { CallToolRequest, CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { argsDigest } from '../../permit-verifier/args-digest.js';
import { AuthzClient, AuthzError, type Decision, type DecisionInput } from '../typescript/index.js';
import { ActionMap, ArgumentProblem } from './actions.js';
import { callParamsProblem, INVALID_PARAMS_CODE, INVALID_PARAMS_REASON } from './call-params.js';
import type { ProxyConfig } from './config.js';
import { MappingError, type DeclaredMappings } from './declared-mappings.js';
import { methodAction, methodTarget, type DecidedMethod } from './methods.js';
import { SETTLE_MAX_BATCH, SETTLE_WINDOW_MS, SettleQueue, type SettleVerb } from './settle-queue.js';
import type { ToolNames } from './tool-names.js';

/** `_meta` keys the proxy sets on forwarded requests (and on its own refusals). */
export const META_DECISION = 'agent-authz/decision';
export const META_PERMIT = 'agent-authz/permit';
export const META_REASON = 'agent-authz/reason';
export const META_ERROR = 'agent-authz/error';
export const META_RETRY_AFTER = 'agent-authz/retry_after';
/** The prefix of every `_meta` key only the proxy may set (compared without regard to case). */
const META_PREFIX = 'agent-authz/';

/** JSON-RPC error codes of the proxy's refusals: the COAZ-MCP binding's denial code, and the internal error. */
export const DENIED_CODE = -32001;
export const INTERNAL_ERROR_CODE = -32603;

/** Most actions one `POST /v1/actions/possible` takes (its schema's maxItems). */
const POSSIBLE_BATCH = 1000;
/** Longest single `GET /v1/decisions/:id?wait=` (the longest the service holds: docs/api.md#human-review-extension). */
const LONGEST_WAIT_SECONDS = 60;

export type CallParams = CallToolRequest['params'];
type Params = Record<string, unknown>;

/** Who a session's decisions are made for: the configuration's agent, or (later) a token's. */
export interface Principal {
  agentId: string;
  sessionId: string;
  onBehalfOf?: string;
  /** The verified claims of the agent's token (`token` in declared mappings); none without auth:. */
  claims?: Record<string, unknown>;
}

/** A JSON-RPC error object. */
export interface RpcError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** What to do with one decided request. */
export type Verdict =
  /** Send `params` (with the decision's `_meta`) to the upstream; settle `decisionId` by its answer. */
  | { kind: 'forward'; params: Params; decisionId: string }
  /** Answer the client with this result (a refused tool call); nothing forwarded. */
  | { kind: 'result'; result: CallToolResult }
  /** Answer the client with this JSON-RPC error; nothing forwarded. */
  | { kind: 'error'; error: RpcError };

export interface EnforcerOptions {
  config: ProxyConfig;
  authz: AuthzClient;
  /** One line to the operator (stderr). */
  log: (line: string) => void;
  /** How long a confirm or reject waits to go out with others, in ms (default SETTLE_WINDOW_MS; 0: at once). */
  settleWindowMs?: number;
}

/** A tool result that refuses the call; the upstream never saw it. */
function refusal(text: string, meta: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: meta };
}

/**
 * The refusal for a call the service did not decide: a 429 names its
 * Retry-After seconds; anything else (service unreachable, bad key, 5xx after
 * the retries) names its code. Fails closed: nothing is forwarded.
 */
export function refusalFromError(error: unknown): CallToolResult {
  if (error instanceof AuthzError && error.status === 429) {
    const after = error.retryAfter ?? 1;
    return refusal(`Refused by agent-authz: ${error.code}, retry after ${after} seconds. The tool was not called.`, {
      [META_ERROR]: error.code,
      [META_RETRY_AFTER]: after,
    });
  }
  const code = error instanceof AuthzError ? error.code : 'mcp_proxy.internal_error';
  const message = error instanceof Error ? error.message : String(error);
  return refusal(`agent-authz could not decide this call (${code}: ${message}). The tool was not called.`, {
    [META_ERROR]: code,
  });
}

/**
 * The JSON-RPC error for a request (other than a tool call) the service did
 * not decide: a 429 is `-32001` with its Retry-After; anything else `-32603`.
 */
export function rpcErrorFrom(error: unknown, method: string): RpcError {
  if (error instanceof AuthzError && error.status === 429) {
    const after = error.retryAfter ?? 1;
    return {
      code: DENIED_CODE,
      message: `Refused by agent-authz: ${error.code}, retry after ${after} seconds. ${method} was not forwarded.`,
      data: { reason: error.code, decision_id: null, retry_after: after },
    };
  }
  if (error instanceof ArgumentProblem)
    return {
      code: -32602,
      message: `agent-authz refused this request: ${error.message}`,
      data: { reason: error.code },
    };
  const code = error instanceof AuthzError ? error.code : 'mcp_proxy.internal_error';
  return {
    code: INTERNAL_ERROR_CODE,
    message: `agent-authz could not decide this request (${code}: ${(error as Error).message}). ${method} was not forwarded.`,
    data: { reason: code },
  };
}

/**
 * The refusal for a deny decision: its reason code and decision id.
 *
 * @example
 * ```ts
 * deniedResult(decision).content[0].text; // => Denied by agent-authz: policy.not_found (decision dec_...). The tool was not called.
 * ```
 */
export function deniedResult(decision: Pick<Decision, 'id' | 'reason'>): CallToolResult {
  return refusal(`Denied by agent-authz: ${decision.reason} (decision ${decision.id}). The tool was not called.`, {
    [META_DECISION]: decision.id,
    [META_REASON]: decision.reason,
  });
}

/**
 * The JSON-RPC error for a denied request other than a tool call.
 *
 * @example
 * ```ts
 * deniedError({ id: 'dec_1', reason: 'policy.not_found' }, 'prompts/get').data; // => { reason: 'policy.not_found', decision_id: 'dec_1' }
 * ```
 */
export function deniedError(decision: Pick<Decision, 'id' | 'reason'>, method: string): RpcError {
  return {
    code: DENIED_CODE,
    message: `Denied by agent-authz: ${decision.reason} (decision ${decision.id}). ${method} was not forwarded.`,
    data: { reason: decision.reason, decision_id: decision.id },
  };
}

/**
 * `_meta` without any key only the proxy may set, in any case
 * (`Agent-Authz/permit` too): a client never passes its own permit upstream.
 *
 * @example
 * ```ts
 * console.log(withoutProxyMeta({ 'Agent-Authz/permit': 'x', progressToken: 1 })); // => { progressToken: 1 }
 * ```
 */
export function withoutProxyMeta(meta: unknown): Record<string, unknown> | undefined {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return undefined;
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta)) if (!k.toLowerCase().startsWith(META_PREFIX)) kept[k] = v;
  return kept;
}

/** The params forwarded for an allowed request: the client's, with the decision and permit in `_meta`. */
function forwardedParams(params: Params, decision: Decision, permit: string): Params {
  return {
    ...params,
    _meta: { ...withoutProxyMeta(params._meta), [META_DECISION]: decision.id, [META_PERMIT]: permit },
  };
}

export class Enforcer {
  readonly actions: ActionMap;
  readonly config: ProxyConfig;
  /** The confirms and rejects waiting to go out together (settle-queue.ts). */
  readonly settles: SettleQueue;
  readonly #authz: AuthzClient;
  readonly #log: (line: string) => void;

  constructor(options: EnforcerOptions) {
    this.config = options.config;
    this.#authz = options.authz;
    this.#log = options.log;
    this.actions = new ActionMap(options.config);
    this.settles = new SettleQueue({
      send: (id, verb) => this.#send(id, verb),
      windowMs: options.settleWindowMs ?? SETTLE_WINDOW_MS,
      maxBatch: SETTLE_MAX_BATCH,
    });
  }

  /** Which of these actions the principal's agent could ever be allowed. */
  async #possible(who: Principal, actions: string[]): Promise<Set<string>> {
    const possible = new Set<string>();
    for (let i = 0; i < actions.length; i += POSSIBLE_BATCH) {
      const { data } = await this.#authz.possible(who.agentId, actions.slice(i, i + POSSIBLE_BATCH));
      for (const entry of data) if (entry.possible) possible.add(entry.action);
    }
    return possible;
  }

  /**
   * The tools this agent may ever be allowed to call, in the upstream's order
   * (colliding ones hidden).
   *
   * @throws the service's error when it cannot say: nothing is listed rather than everything.
   */
  async visibleTools(tools: Tool[], who: Principal, names: ToolNames, declared?: DeclaredMappings): Promise<Tool[]> {
    // A declared mapping's literal action is checked; one computed per call shows the tool; a refused one hides it.
    const rule = (t: Tool) => declared?.listing(t.name) ?? { action: this.actions.actionOf(t.name) };
    const candidates = tools.filter((t) => names.collision(t.name) === undefined && rule(t) !== 'hidden');
    const checked = candidates.map(rule).flatMap((r) => (typeof r === 'object' ? [r.action] : []));
    const possible = await this.#possible(who, [...new Set(checked)]);
    return candidates.filter((t) => {
      const r = rule(t);
      return r === 'shown' || (typeof r === 'object' && possible.has(r.action));
    });
  }

  /**
   * Whether a list (prompts, resources) is shown: the action of the method
   * behind it could be allowed for the agent.
   *
   * @throws the service's error when it cannot say.
   */
  async listShown(method: DecidedMethod, who: Principal): Promise<boolean> {
    const action = methodAction(this.config, method);
    return (await this.#possible(who, [action])).has(action);
  }

  /**
   * Decides one `tools/call`.
   *
   * @param notify - progress for the client while a decision awaits a human's approval (when the client asked for progress).
   */
  async call(
    params: CallParams,
    who: Principal,
    names: ToolNames,
    notify?: (message: string) => Promise<void>,
    declared?: DeclaredMappings,
  ): Promise<Verdict> {
    const problem = callParamsProblem(params);
    if (problem !== undefined)
      return {
        kind: 'error',
        error: {
          code: INVALID_PARAMS_CODE,
          message: `Invalid params: ${problem}`,
          data: { reason: INVALID_PARAMS_REASON },
        },
      };
    const tool = params.name;
    // The digest is of the arguments as sent (docs/permits.md#permits-bound-to-arguments: absent digested as {}, an explicit null as null);
    // the mapping and the decision's context read `args`, where null and absent are both {}.
    const sent: unknown = params.arguments;
    const args = params.arguments ?? {};
    const colliding = names.collision(tool);
    if (colliding !== undefined) {
      const text = `agent-authz refused this call: the tool's action ${colliding} collides with another tool's (map it in the proxy configuration). The tool was not called.`;
      return { kind: 'result', result: refusal(text, { [META_ERROR]: 'mcp_proxy.tool_collision' }) };
    }
    let decision: Decision;
    try {
      const target = declared?.target(params, who.claims ?? {}) ?? this.actions.target(tool, args);
      decision = await this.#decide(
        {
          action: target.action,
          ...(target.resource === undefined ? {} : { resource: target.resource }),
          ...(target.amount === undefined ? {} : { amount: target.amount }),
          context: { mcp: { server: this.config.server, tool, arguments: args } },
          args_digest: argsDigest(sent),
        },
        who,
        notify,
      );
    } catch (error) {
      if (error instanceof ArgumentProblem || error instanceof MappingError) {
        return {
          kind: 'result',
          result: refusal(`agent-authz refused this call: ${error.message}. The tool was not called.`, {
            [META_ERROR]: error.code,
          }),
        };
      }
      return { kind: 'result', result: refusalFromError(error) };
    }
    if (decision.status === 'awaiting_approval') {
      const text = `Awaiting approval in agent-authz: not approved within ${this.config.approval_wait_seconds} seconds (decision ${decision.id}). The tool was not called.`;
      return {
        kind: 'result',
        result: refusal(text, { [META_DECISION]: decision.id, [META_REASON]: 'awaiting_approval' }),
      };
    }
    if (decision.effect === 'deny') return { kind: 'result', result: deniedResult(decision) };
    if (!decision.permit_token)
      return {
        kind: 'result',
        result: refusalFromError(new Error(`decision ${decision.id} came without a permit token`)),
      };
    // An explicit null goes on as null, so the upstream's verifier digests what the permit was decided for.
    const forwarded = sent === null ? params : { ...params, arguments: args };
    return {
      kind: 'forward',
      params: forwardedParams(forwarded, decision, decision.permit_token),
      decisionId: decision.id,
    };
  }

  /** Decides one request of the other decided methods (resources, prompts, completion, logging). */
  async request(
    method: DecidedMethod,
    params: Params,
    who: Principal,
    notify?: (message: string) => Promise<void>,
  ): Promise<Verdict> {
    let decision: Decision;
    try {
      const target = methodTarget(this.config, method, params);
      decision = await this.#decide(
        {
          action: target.action,
          ...(target.resource === undefined ? {} : { resource: target.resource }),
          context: { mcp: target.mcp },
        },
        who,
        notify,
      );
    } catch (error) {
      return { kind: 'error', error: rpcErrorFrom(error, method) };
    }
    if (decision.status === 'awaiting_approval') {
      return {
        kind: 'error',
        error: {
          code: DENIED_CODE,
          message: `Awaiting approval in agent-authz: not approved within ${this.config.approval_wait_seconds} seconds (decision ${decision.id}). ${method} was not forwarded.`,
          data: { reason: 'awaiting_approval', decision_id: decision.id },
        },
      };
    }
    if (decision.effect === 'deny') return { kind: 'error', error: deniedError(decision, method) };
    if (!decision.permit_token)
      return {
        kind: 'error',
        error: rpcErrorFrom(new Error(`decision ${decision.id} came without a permit token`), method),
      };
    return {
      kind: 'forward',
      params: forwardedParams(params, decision, decision.permit_token),
      decisionId: decision.id,
    };
  }

  /** One `POST /v1/decisions` for the principal; a decision awaiting approval is waited for. */
  async #decide(
    input: Omit<DecisionInput, 'agent_id'>,
    who: Principal,
    notify?: (message: string) => Promise<void>,
  ): Promise<Decision> {
    const decision = await this.#authz.decide({
      ...input,
      agent_id: who.agentId,
      session_id: who.sessionId,
      ...(who.onBehalfOf === undefined ? {} : { on_behalf_of: who.onBehalfOf }),
      ...(this.config.ttl_seconds === undefined ? {} : { ttl_seconds: this.config.ttl_seconds }),
    });
    return decision.status === 'awaiting_approval' ? this.#awaitApproval(decision, notify) : decision;
  }

  /**
   * Waits, up to `approval_wait_seconds`, for a human's verdict on a decision
   * that awaits approval (docs/reviews.md#the-rules). Approved: the decision with
   * a fresh permit token. Denied or timed out: the deny. Still waiting: the
   * decision as it is (the caller refuses the request).
   */
  async #awaitApproval(first: Decision, notify?: (message: string) => Promise<void>): Promise<Decision> {
    const deadline = Date.now() + this.config.approval_wait_seconds * 1000;
    let decision = first;
    for (;;) {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (decision.status !== 'awaiting_approval' || left < 1) break;
      await notify?.(`awaiting a human's approval in agent-authz (decision ${decision.id})`);
      decision = await this.#authz.get(decision.id, { waitSeconds: Math.min(left, LONGEST_WAIT_SECONDS) });
    }
    if (decision.effect !== 'deny' && decision.status === 'pending' && !decision.permit_token) {
      decision = { ...decision, permit_token: (await this.#authz.permit(decision.id)).permit_token };
    }
    return decision;
  }

  /**
   * Confirms or rejects a forwarded request's decision, together with the
   * others of the next few ms (settle-queue.ts); resolves once sent. The
   * client library retries under one idempotency key; a failure is logged: the
   * answer has gone to the client already, and an unconfirmed decision expires.
   */
  settle(id: string, verb: SettleVerb): Promise<void> {
    return this.settles.add(id, verb);
  }

  async #send(id: string, verb: SettleVerb): Promise<void> {
    try {
      if (verb === 'confirm') await this.#authz.confirm(id);
      else await this.#authz.reject(id);
    } catch (error) {
      const code = error instanceof AuthzError ? error.code : 'error';
      this.#log(`could not ${verb} decision ${id}: ${code}: ${(error as Error).message}`);
    }
  }
}
