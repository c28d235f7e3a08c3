/**
 * One client session of `authz mcp-proxy` joined to its own upstream session,
 * message by message, on the SDK's transports (docs/mcp.md#what-the-proxy-does). Every JSON-RPC message passes as it is, both ways, except:
 *
 * - a client request is decided first where docs/mcp.md says so (enforce.ts)
 *   and refused, never forwarded, when not allowed; a request method the proxy
 *   does not know is refused unless the configuration lists it under
 *   `pass_through:`; `_meta` keys only the proxy may set never pass upstream;
 * - `tools/list` answers lose the tools the agent can never call, and the
 *   prompt and resource lists are empty when their action can never be allowed;
 * - on the upstream's `notifications/tools/list_changed` the proxy reads the
 *   tools again (its own requests, ids `authz-proxy-<n>`, whose answers are
 *   not relayed) before passing the notification on;
 * - a forwarded request's decision is confirmed or rejected after the answer
 *   has gone to the client (with the other sessions' settles of the next few
 *   ms, settle-queue.ts).
 *
 * Requests and notifications from the upstream go to this session's client;
 * over Streamable HTTP they travel on the stream of the client request in
 * flight (the one most recently forwarded, or the one a progress token names),
 * else on the session's standalone stream.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import {
  DENIED_CODE,
  INTERNAL_ERROR_CODE,
  rpcErrorFrom,
  withoutProxyMeta,
  type Enforcer,
  type Principal,
  type RpcError,
  type Verdict,
} from './enforce.js';
import type { DeclaredMappings } from './declared-mappings.js';
import { FILTERED_LISTS, isDecidedMethod, UNDECIDED_METHODS, type FilteredList } from './methods.js';
import type { OutputGate } from './output/gate.js';
import type { ToolNames } from './tool-names.js';

/** The prefix of the ids of the proxy's own requests to the upstream. */
export const OWN_ID_PREFIX = 'authz-proxy-';
/** How long the proxy waits for the answer to one of its own requests. */
const OWN_REQUEST_TIMEOUT_MS = 30_000;

export interface RelayOptions {
  /** The client side: StdioServerTransport or a StreamableHTTPServerTransport session. */
  downstream: Transport;
  /** The upstream side: StdioClientTransport or StreamableHTTPClientTransport, not started. */
  upstream: Transport;
  enforcer: Enforcer;
  /** Whom this session's decisions are for. */
  principal: Principal;
  /** This session's view of the upstream's tool names. */
  names: ToolNames;
  /** This session's view of the mappings the upstream's tools declare (declared_mappings:). */
  declared?: DeclaredMappings;
  /** This session's output side (output/gate.ts): results read, recorded, redacted or blocked before the client sees them. */
  output?: OutputGate;
  log: (line: string) => void;
}

/** A client request forwarded to the upstream, awaiting its answer. */
interface Forwarded {
  id: RequestId;
  method: string;
  decisionId?: string;
  /** For `tools/call`: the tool called. */
  tool?: string;
  progressToken?: string | number;
  /** For `tools/list`: whether this is a listing's first page. */
  firstPage?: boolean;
}

/** Why a relay ended. */
export type RelayEnd = 'client' | 'upstream' | 'closed';

const keyOf = (id: RequestId) => `${typeof id}:${id}`;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A message's params with the proxy's own `_meta` keys dropped (any case). */
function cleaned<M extends { params?: Record<string, unknown> | undefined }>(message: M): M {
  if (!isRecord(message.params) || message.params._meta === undefined) return message;
  return { ...message, params: { ...message.params, _meta: withoutProxyMeta(message.params._meta) ?? {} } };
}

export class Relay {
  /** Called once when the relay has ended, with the side that ended it. */
  onend?: (why: RelayEnd) => void;
  readonly #o: RelayOptions;
  /** Client requests forwarded and not yet answered, in the order sent. */
  readonly #forwarded = new Map<string, Forwarded>();
  /** Client requests being decided; a key is dropped when the client cancels it. */
  readonly #deciding = new Set<string>();
  readonly #own = new Map<
    string,
    { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }
  >();
  readonly #settling = new Set<Promise<void>>();
  #ownSeq = 0;
  #ended = false;

  constructor(options: RelayOptions) {
    this.#o = options;
  }

  /** Starts the upstream (a stdio server's process is spawned), then the client side. */
  async start(): Promise<void> {
    const { upstream, downstream, log } = this.#o;
    upstream.onmessage = (message) => this.#fromUpstream(message);
    downstream.onmessage = (message) => this.#fromClient(message);
    upstream.onclose = () => void this.close('upstream');
    downstream.onclose = () => void this.close('client');
    upstream.onerror = (error) => log(`upstream: ${error.message}`);
    downstream.onerror = (error) => log(`client: ${error.message}`);
    await upstream.start();
    await downstream.start();
  }

  /** Confirms and rejects still in flight (for tests and an orderly stop). */
  async settled(): Promise<void> {
    while (this.#settling.size > 0) await Promise.allSettled([...this.#settling]);
  }

  /** Ends both sides (an HTTP upstream session is terminated); the pending confirms finish first. */
  async close(why: RelayEnd = 'closed'): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    for (const own of this.#own.values()) own.reject(new Error('the session ended'));
    this.#own.clear();
    const upstream = this.#o.upstream as Transport & { terminateSession?: () => Promise<void> };
    if (why !== 'upstream' && upstream.sessionId !== undefined && typeof upstream.terminateSession === 'function') {
      await upstream.terminateSession().catch(() => undefined);
    }
    await Promise.allSettled([upstream.close(), this.#o.downstream.close()]);
    // This session's confirms go out now rather than after the batching window.
    if (this.#settling.size > 0) this.#o.enforcer.settles.flush();
    await this.settled();
    this.onend?.(why);
  }

  // ---- client -> upstream

  #fromClient(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      this.#clientRequest(message).catch((error: unknown) =>
        this.#answerError(message.id, rpcErrorFrom(error, message.method)),
      );
      return;
    }
    if (isJSONRPCNotification(message)) {
      if (message.method === 'notifications/cancelled' && isRecord(message.params)) {
        const id = message.params.requestId;
        if (typeof id === 'string' || typeof id === 'number') this.#deciding.delete(keyOf(id));
      }
      void this.#toUpstream(cleaned(message));
      return;
    }
    // The client's answer to a request of the upstream (sampling, elicitation, roots).
    void this.#toUpstream(message);
  }

  async #clientRequest(request: JSONRPCRequest): Promise<void> {
    const { enforcer, principal, names } = this.#o;
    const { id, method } = request;
    const params: Record<string, unknown> = isRecord(request.params) ? request.params : {};
    if (typeof id === 'string' && id.startsWith(OWN_ID_PREFIX)) {
      return this.#answerError(id, {
        code: -32600,
        message: `request ids beginning with "${OWN_ID_PREFIX}" are the proxy's own`,
      });
    }
    const progressToken = isRecord(params._meta)
      ? (params._meta.progressToken as string | number | undefined)
      : undefined;
    const base: Forwarded = { id, method, ...(progressToken === undefined ? {} : { progressToken }) };

    if (method === 'tools/call' || isDecidedMethod(method)) {
      const key = keyOf(id);
      this.#deciding.add(key);
      const notify = progressToken === undefined ? undefined : this.#approvalProgress(id, progressToken);
      const verdict: Verdict =
        method === 'tools/call'
          ? await enforcer.call(params as Parameters<Enforcer['call']>[0], principal, names, notify, this.#o.declared)
          : await enforcer.request(method as Parameters<Enforcer['request']>[0], params, principal, notify);
      const cancelled = !this.#deciding.delete(key);
      if (verdict.kind === 'result') return this.#answer(id, verdict.result);
      if (verdict.kind === 'error') return this.#answerError(id, verdict.error);
      if (cancelled) {
        this.#settle(verdict.decisionId, 'reject');
        return;
      }
      const tool = method === 'tools/call' && typeof params.name === 'string' ? { tool: params.name } : {};
      return this.#forward(
        { ...request, params: verdict.params },
        { ...base, ...tool, decisionId: verdict.decisionId },
      );
    }
    if (Object.hasOwn(FILTERED_LISTS, method)) {
      const list = FILTERED_LISTS[method as FilteredList];
      let shown: boolean;
      try {
        shown = await enforcer.listShown(list.method, principal);
      } catch (error) {
        return this.#answerError(id, rpcErrorFrom(error, method));
      }
      if (!shown) return this.#answer(id, { [list.field]: [] });
      return this.#forward(cleaned(request), base);
    }
    if (UNDECIDED_METHODS.has(method) || enforcer.config.pass_through.includes(method)) {
      return this.#forward(
        cleaned(request),
        method === 'tools/list' ? { ...base, firstPage: params.cursor === undefined } : base,
      );
    }
    return this.#answerError(id, {
      code: DENIED_CODE,
      message: `agent-authz refused ${method}: the proxy does not know this method (list it under pass_through: in the proxy configuration to forward it undecided)`,
      data: { reason: 'mcp_proxy.unknown_method' },
    });
  }

  /** Progress for the client while its request awaits a human's approval. */
  #approvalProgress(id: RequestId, progressToken: string | number) {
    let step = 0;
    return (message: string) =>
      this.#toClient(
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: ++step, message } },
        id,
      );
  }

  async #forward(request: JSONRPCRequest, entry: Forwarded): Promise<void> {
    const key = keyOf(request.id);
    this.#forwarded.set(key, entry);
    try {
      await this.#o.upstream.send(request);
    } catch (error) {
      this.#forwarded.delete(key);
      if (entry.decisionId !== undefined) this.#settle(entry.decisionId, 'reject');
      await this.#answerError(request.id, {
        code: INTERNAL_ERROR_CODE,
        message: `the upstream MCP server could not be reached: ${(error as Error).message}`,
      });
    }
  }

  async #toUpstream(message: JSONRPCMessage): Promise<void> {
    try {
      await this.#o.upstream.send(message);
    } catch (error) {
      this.#o.log(`could not pass a message to the upstream: ${(error as Error).message}`);
    }
  }

  // ---- upstream -> client

  #fromUpstream(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id;
      if (typeof id === 'string' && id.startsWith(OWN_ID_PREFIX)) {
        const own = this.#own.get(id);
        this.#own.delete(id);
        if (isJSONRPCResultResponse(message)) own?.resolve(message.result);
        else own?.reject(new Error(`${message.error.code}: ${message.error.message}`));
        return;
      }
      const entry = id === undefined ? undefined : this.#forwarded.get(keyOf(id));
      if (!entry) {
        this.#o.log(`dropped an answer of the upstream to no forwarded request (id ${JSON.stringify(id)})`);
        return;
      }
      this.#forwarded.delete(keyOf(entry.id));
      void this.#answerFromUpstream(message, entry);
      return;
    }
    if (isJSONRPCRequest(message)) {
      void this.#toClient(message, this.#inFlight());
      return;
    }
    if (message.method === 'notifications/tools/list_changed') {
      void this.#readTools().finally(() => this.#toClient(message));
      return;
    }
    if (message.method === 'notifications/resources/updated' || message.method.endsWith('/list_changed')) {
      void this.#toClient(message);
      return;
    }
    const token =
      message.method === 'notifications/progress' && isRecord(message.params)
        ? message.params.progressToken
        : undefined;
    void this.#toClient(
      message,
      token === undefined ? this.#inFlight() : (this.#byProgressToken(token) ?? this.#inFlight()),
    );
  }

  async #answerFromUpstream(message: JSONRPCResultResponse | JSONRPCErrorResponse, entry: Forwarded): Promise<void> {
    let answer: JSONRPCMessage = message;
    if (isJSONRPCResultResponse(message)) {
      if (entry.method === 'initialize') this.#setProtocolVersion(message.result.protocolVersion);
      if (entry.method === 'tools/list' && Array.isArray(message.result.tools)) {
        const tools = message.result.tools as Tool[];
        const page = { firstPage: entry.firstPage ?? true, lastPage: message.result.nextCursor === undefined };
        this.#o.names.note(
          tools.map((t) => t.name),
          page,
        );
        this.#o.declared?.note(tools, page);
        this.#o.output?.noteTools(tools);
        try {
          answer = {
            ...message,
            result: {
              ...message.result,
              tools: await this.#o.enforcer.visibleTools(tools, this.#o.principal, this.#o.names, this.#o.declared),
            },
          };
        } catch (error) {
          answer = { jsonrpc: '2.0', id: entry.id, error: rpcErrorFrom(error, 'tools/list') };
        }
      }
      // The output side: read, recorded, maybe redacted or blocked, before the client sees it.
      const output = this.#o.output;
      if (output && entry.decisionId !== undefined && output.reads(entry.method)) {
        const read = await output.answer(entry.method, entry.tool, message.result, entry.decisionId);
        answer =
          'error' in read ? { jsonrpc: '2.0', id: entry.id, error: read.error } : { ...message, result: read.result };
      }
    }
    await this.#toClient(answer);
    if (entry.decisionId !== undefined) {
      const failed =
        !isJSONRPCResultResponse(message) || (entry.method === 'tools/call' && message.result.isError === true);
      this.#settle(entry.decisionId, failed ? 'reject' : 'confirm');
    }
  }

  #setProtocolVersion(version: unknown): void {
    const upstream = this.#o.upstream as Transport & { setProtocolVersion?: (v: string) => void };
    if (typeof version === 'string') upstream.setProtocolVersion?.(version);
  }

  /** The client request most recently forwarded and not yet answered. */
  #inFlight(): RequestId | undefined {
    let last: RequestId | undefined;
    for (const entry of this.#forwarded.values()) last = entry.id;
    return last;
  }

  #byProgressToken(token: unknown): RequestId | undefined {
    for (const entry of this.#forwarded.values()) if (entry.progressToken === token) return entry.id;
    return undefined;
  }

  /** Sends to the client, on the stream of `related` when it is still open, else on the session's own. */
  async #toClient(message: JSONRPCMessage, related?: RequestId): Promise<void> {
    const { downstream, log } = this.#o;
    try {
      await downstream.send(message, related === undefined ? undefined : { relatedRequestId: related });
    } catch (error) {
      if (related !== undefined) return this.#toClient(message);
      log(`could not pass a message to the client: ${(error as Error).message}`);
    }
  }

  #answer(id: RequestId, result: Record<string, unknown>): Promise<void> {
    return this.#toClient({ jsonrpc: '2.0', id, result });
  }

  #answerError(id: RequestId, error: RpcError): Promise<void> {
    return this.#toClient({ jsonrpc: '2.0', id, error });
  }

  #settle(decisionId: string, verb: 'confirm' | 'reject'): void {
    const done = this.#o.enforcer.settle(decisionId, verb).finally(() => this.#settling.delete(done));
    this.#settling.add(done);
  }

  // ---- the proxy's own requests

  /** Reads every page of the upstream's tools and notes the names (collisions apply from then on). */
  async #readTools(): Promise<void> {
    try {
      const tools: Tool[] = [];
      let cursor: unknown;
      do {
        const page = await this.#ownRequest('tools/list', cursor === undefined ? {} : { cursor });
        tools.push(...((page.tools ?? []) as Tool[]));
        cursor = page.nextCursor;
      } while (typeof cursor === 'string');
      this.#o.names.note(tools.map((t) => t.name));
      this.#o.declared?.note(tools);
      this.#o.output?.noteTools(tools);
    } catch (error) {
      this.#o.log(`could not read the upstream's tools after it said they changed: ${(error as Error).message}`);
    }
  }

  #ownRequest(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = `${OWN_ID_PREFIX}${++this.#ownSeq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#own.delete(id);
        reject(new Error(`no answer to ${method} within ${OWN_REQUEST_TIMEOUT_MS / 1000} s`));
      }, OWN_REQUEST_TIMEOUT_MS);
      timer.unref();
      const done =
        <T>(f: (v: T) => void) =>
        (v: T) => (clearTimeout(timer), f(v));
      this.#own.set(id, { resolve: done(resolve), reject: done(reject) });
      this.#o.upstream.send({ jsonrpc: '2.0', id, method, params }).catch((error: Error) => {
        this.#own.delete(id);
        done(reject)(error);
      });
    });
  }
}
