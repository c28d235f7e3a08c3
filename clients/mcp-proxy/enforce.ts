/**
 * What the proxy does with each MCP request, whatever the transports
 * (contract, second part: MCP enforcement proxy):
 *
 * - `tools/list`: the upstream's tools without those this agent can never be
 *   allowed to call (`POST /v1/actions/possible`);
 * - `tools/call`: decided by the service first, every call (hidden tools
 *   included). A deny, a 429, an unreachable service or a call that cannot be
 *   mapped becomes a tool result with `isError: true` and never reaches the
 *   upstream; an allow or review is forwarded with the decision id and permit
 *   in `_meta`, the upstream's result is returned as it is, and the decision is
 *   confirmed (a result without `isError`) or rejected (with `isError: true`,
 *   or when the upstream answers an error) before the answer goes back.
 */
import { McpError, ErrorCode, type CallToolRequest, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { argsDigest } from '../../verifier/args-digest.js';
import { AuthzClient, AuthzError, type Decision } from '../typescript/index.js';
import { ActionMap, ArgumentProblem } from './actions.js';
import type { ProxyConfig } from './config.js';

/** `_meta` keys the proxy sets on forwarded calls (and on its own refusals). */
export const META_DECISION = 'agent-authz/decision';
export const META_PERMIT = 'agent-authz/permit';
export const META_REASON = 'agent-authz/reason';
export const META_ERROR = 'agent-authz/error';
export const META_RETRY_AFTER = 'agent-authz/retry_after';

/** Most actions one `POST /v1/actions/possible` takes (its schema's maxItems). */
const POSSIBLE_BATCH = 1000;
/** Longest single `GET /v1/decisions/:id?wait=` (the contract's maximum). */
const LONGEST_WAIT_SECONDS = 60;

export type CallParams = CallToolRequest['params'];

/** Sends a call on to the upstream and answers its result (or throws its error). */
export type Forward = (params: CallParams) => Promise<CallToolResult>;

export interface EnforcerOptions {
  config: ProxyConfig;
  authz: AuthzClient;
  /** One line to the operator (stderr). */
  log: (line: string) => void;
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
  return refusal(`agent-authz could not decide this call (${code}: ${message}). The tool was not called.`, { [META_ERROR]: code });
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

/** `_meta` of a downstream call without the keys only the proxy may set (and the progress token, which is the proxy's own upstream). */
function forwardedMeta(meta: CallParams['_meta'], decision: Decision, permit: string): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta ?? {})) if (!k.startsWith('agent-authz/') && k !== 'progressToken') kept[k] = v;
  return { ...kept, [META_DECISION]: decision.id, [META_PERMIT]: permit };
}

export class Enforcer {
  readonly actions: ActionMap;
  readonly #config: ProxyConfig;
  readonly #authz: AuthzClient;
  readonly #log: (line: string) => void;
  /** Tools of the latest listing whose action collides with another's: hidden and refused. */
  #colliding = new Map<string, string>();
  /** The tool names of the latest listing, every page read so far. */
  #listed = new Set<string>();

  constructor(options: EnforcerOptions) {
    this.#config = options.config;
    this.#authz = options.authz;
    this.#log = options.log;
    this.actions = new ActionMap(options.config);
  }

  /**
   * Notes the tools an upstream listing offers: a tool whose action collides
   * with another's is hidden and its calls refused (at start such a collision
   * stops the proxy; this catches tools that appear later). A listing's later
   * pages add to its first.
   */
  noteTools(names: readonly string[], page: { firstPage: boolean } = { firstPage: true }): void {
    if (page.firstPage) this.#listed = new Set();
    for (const name of names) this.#listed.add(name);
    const next = new Map<string, string>();
    for (const { action, tools } of this.actions.collisions([...this.#listed])) for (const t of tools) next.set(t, action);
    for (const [tool, action] of next) if (!this.#colliding.has(tool)) this.#log(`tool "${tool}" is hidden: its action ${action} collides with another tool's`);
    this.#colliding = next;
  }

  /**
   * The tools this agent may ever be allowed to call, in the upstream's order.
   *
   * @throws McpError (InternalError) when the service cannot say: nothing is listed rather than everything.
   */
  async visibleTools(tools: Tool[]): Promise<Tool[]> {
    const candidates = tools.filter((t) => !this.#colliding.has(t.name));
    const actions = [...new Set(candidates.map((t) => this.actions.actionOf(t.name)))];
    const possible = new Set<string>();
    try {
      for (let i = 0; i < actions.length; i += POSSIBLE_BATCH) {
        const { data } = await this.#authz.possible(this.#config.agent_id, actions.slice(i, i + POSSIBLE_BATCH));
        for (const entry of data) if (entry.possible) possible.add(entry.action);
      }
    } catch (error) {
      const code = error instanceof AuthzError ? error.code : 'mcp_proxy.internal_error';
      throw new McpError(ErrorCode.InternalError, `agent-authz could not check which tools this agent may use (${code}: ${(error as Error).message})`);
    }
    return candidates.filter((t) => possible.has(this.actions.actionOf(t.name)));
  }

  /**
   * Decides one `tools/call` and forwards it when allowed.
   *
   * @param notify - progress for the client while a decision awaits a human's approval (when the client asked for progress).
   * @throws whatever `forward` throws (the upstream's JSON-RPC error), after rejecting the decision.
   */
  async call(params: CallParams, forward: Forward, notify?: (message: string) => Promise<void>): Promise<CallToolResult> {
    const tool = params.name;
    const args = params.arguments ?? {};
    const colliding = this.#colliding.get(tool);
    if (colliding !== undefined) {
      return refusal(`agent-authz refused this call: the tool's action ${colliding} collides with another tool's (map it in the proxy configuration). The tool was not called.`, {
        [META_ERROR]: 'mcp_proxy.action_collision',
      });
    }
    let decision: Decision;
    try {
      const target = this.actions.target(tool, args);
      decision = await this.#authz.decide({
        agent_id: this.#config.agent_id,
        action: target.action,
        ...(target.resource === undefined ? {} : { resource: target.resource }),
        ...(target.amount === undefined ? {} : { amount: target.amount }),
        context: { mcp: { server: this.#config.server, tool, arguments: args } },
        args_digest: argsDigest(args),
        ...(this.#config.ttl_seconds === undefined ? {} : { ttl_seconds: this.#config.ttl_seconds }),
      });
      if (decision.status === 'awaiting_approval') decision = await this.#awaitApproval(decision, notify);
    } catch (error) {
      if (error instanceof ArgumentProblem) {
        return refusal(`agent-authz refused this call: ${error.message}. The tool was not called.`, { [META_ERROR]: error.code });
      }
      return refusalFromError(error);
    }
    if (decision.status === 'awaiting_approval') {
      return refusal(
        `Awaiting approval in agent-authz: not approved within ${this.#config.approval_wait_seconds} seconds (decision ${decision.id}). The tool was not called.`,
        { [META_DECISION]: decision.id, [META_REASON]: 'awaiting_approval' },
      );
    }
    if (decision.effect === 'deny') return deniedResult(decision);
    if (!decision.permit_token) return refusalFromError(new Error(`decision ${decision.id} came without a permit token`));

    let result: CallToolResult;
    try {
      result = await forward({ ...params, arguments: args, _meta: forwardedMeta(params._meta, decision, decision.permit_token) });
    } catch (error) {
      await this.#settle(decision.id, 'reject');
      throw error;
    }
    await this.#settle(decision.id, result.isError === true ? 'reject' : 'confirm');
    return result;
  }

  /**
   * Waits, up to `approval_wait_seconds`, for a human's verdict on a decision
   * that awaits approval (contract: Human review). Approved: the decision with
   * a fresh permit token. Denied or timed out: the deny. Still waiting: the
   * decision as it is (the caller refuses the call).
   */
  async #awaitApproval(first: Decision, notify?: (message: string) => Promise<void>): Promise<Decision> {
    const deadline = Date.now() + this.#config.approval_wait_seconds * 1000;
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

  /** Confirms or rejects; a failure is logged (the result still goes back: the tool did run). */
  async #settle(id: string, verb: 'confirm' | 'reject'): Promise<void> {
    try {
      if (verb === 'confirm') await this.#authz.confirm(id);
      else await this.#authz.reject(id);
    } catch (error) {
      const code = error instanceof AuthzError ? error.code : 'error';
      this.#log(`could not ${verb} decision ${id}: ${code}: ${(error as Error).message}`);
    }
  }
}
