/**
 * The MCP side of `authz mcp-proxy`, on the official SDK: one MCP client to the
 * upstream server (stdio: a child process; or Streamable HTTP), and an MCP
 * server for each downstream connection (stdio, or each Streamable HTTP
 * session), whose `tools/list` and `tools/call` go through the Enforcer.
 */
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { AuthzClient } from '../typescript/index.js';
import { ProxyConfigError, type ProxyConfig } from './config.js';
import { Enforcer } from './enforce.js';

/** Where the upstream MCP server is. */
export type UpstreamTarget =
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | { kind: 'http'; url: URL };

export interface McpProxyOptions {
  config: ProxyConfig;
  authz: AuthzClient;
  upstream: UpstreamTarget;
  /** One line to the operator (stderr: stdout may be the MCP channel). */
  log: (line: string) => void;
  /** Time limit of a forwarded call, in ms (reset by the upstream's progress notifications); default 300000. */
  callTimeoutMs?: number;
  /** Called once if the upstream connection closes while the proxy runs. */
  onUpstreamClosed?: () => void;
}

const DEFAULT_CALL_TIMEOUT_MS = 300_000;

/** The package's version, for the proxy's serverInfo (package.json above this file, in the source tree or dist/). */
function packageVersion(): string {
  for (let dir = new URL('./', import.meta.url); dir.pathname !== '/'; dir = new URL('../', dir)) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'agent-authz' && pkg.version) return pkg.version;
    } catch {
      // not here: one level up
    }
  }
  return '0.0.0';
}

function transportFor(target: UpstreamTarget) {
  if (target.kind === 'http') return new StreamableHTTPClientTransport(target.url);
  return new StdioClientTransport({
    command: target.command,
    args: target.args,
    ...(target.env ? { env: target.env } : {}),
    ...(target.cwd ? { cwd: target.cwd } : {}),
    stderr: 'inherit',
  });
}

/** Every tool of the upstream (all pages). */
async function listAllTools(upstream: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await upstream.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ListToolsResultSchema);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/**
 * A running proxy: connected to its upstream, its tool names checked.
 *
 * @example
 * ```ts
 * const proxy = await McpProxy.start({ config, authz, upstream: { kind: 'stdio', command: 'node', args: ['tools.js'] }, log: console.error });
 * await proxy.createServer().connect(new StdioServerTransport());
 * ```
 */
export class McpProxy {
  readonly enforcer: Enforcer;
  readonly version = packageVersion();
  readonly #upstream: Client;
  readonly #servers = new Set<Server>();
  readonly #callTimeoutMs: number;
  #closing = false;

  private constructor(upstream: Client, enforcer: Enforcer, callTimeoutMs: number) {
    this.#upstream = upstream;
    this.enforcer = enforcer;
    this.#callTimeoutMs = callTimeoutMs;
  }

  /**
   * Connects to the upstream and checks its tools' action names.
   *
   * @throws ProxyConfigError when two tools would map to the same action (the upstream is closed again);
   *   the SDK's error when the upstream cannot be reached.
   */
  static async start(options: McpProxyOptions): Promise<McpProxy> {
    const upstream = new Client({ name: 'agent-authz-mcp-proxy', version: packageVersion() });
    await upstream.connect(transportFor(options.upstream));
    const enforcer = new Enforcer({ config: options.config, authz: options.authz, log: options.log });
    const proxy = new McpProxy(upstream, enforcer, options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS);
    try {
      const names = (await listAllTools(upstream)).map((t) => t.name);
      const collisions = enforcer.actions.collisions(names);
      if (collisions.length > 0) {
        throw new ProxyConfigError(
          'the upstream\'s tools',
          collisions.map((c) => `tools ${c.tools.map((t) => JSON.stringify(t)).join(' and ')} would all be decided as ${c.action}: map them to actions of their own under "tools:" in the configuration`),
        );
      }
      for (const tool of enforcer.actions.unknownMappings(names)) options.log(`warning: the configuration maps tool "${tool}", which the upstream does not offer`);
      enforcer.noteTools(names);
    } catch (error) {
      await upstream.close().catch(() => undefined);
      throw error;
    }
    upstream.onclose = () => {
      if (!proxy.#closing) options.onUpstreamClosed?.();
    };
    upstream.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      for (const server of proxy.#servers) await server.sendToolListChanged().catch(() => undefined);
    });
    return proxy;
  }

  /** The upstream's instructions, passed on to the downstream client. */
  get instructions(): string | undefined {
    return this.#upstream.getInstructions();
  }

  /**
   * A new MCP server for one downstream connection (call `connect` on it with a transport).
   *
   * @example
   * ```ts
   * await proxy.createServer().connect(new StdioServerTransport());
   * ```
   */
  createServer(): Server {
    const instructions = this.instructions;
    const server = new Server(
      { name: 'agent-authz-mcp-proxy', version: this.version },
      { capabilities: { tools: { listChanged: true } }, ...(instructions ? { instructions } : {}) },
    );
    server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
      const cursor = request.params?.cursor;
      const page = await this.#upstream.request(
        { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
        ListToolsResultSchema,
        { signal: extra.signal },
      );
      this.enforcer.noteTools(page.tools.map((t) => t.name), { firstPage: cursor === undefined });
      return { ...page, tools: await this.enforcer.visibleTools(page.tools) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const progressToken = request.params._meta?.progressToken;
      let step = 0;
      const progress = (params: { progress: number; total?: number; message?: string }) =>
        extra.sendNotification({ method: 'notifications/progress', params: { ...params, progressToken: progressToken! } }).catch(() => undefined);
      return this.enforcer.call(
        request.params,
        (params) =>
          this.#upstream.request({ method: 'tools/call', params }, CallToolResultSchema, {
            signal: extra.signal,
            timeout: this.#callTimeoutMs,
            resetTimeoutOnProgress: true,
            ...(progressToken === undefined ? {} : { onprogress: (p) => void progress(p) }),
          }),
        progressToken === undefined ? undefined : async (message) => progress({ progress: ++step, message }),
      );
    });
    this.#servers.add(server);
    const previous = server.onclose;
    server.onclose = () => {
      this.#servers.delete(server);
      previous?.();
    };
    return server;
  }

  /** Closes every downstream server and the upstream (a stdio upstream's process ends). */
  async close(): Promise<void> {
    this.#closing = true;
    for (const server of [...this.#servers]) await server.close().catch(() => undefined);
    await this.#upstream.close().catch(() => undefined);
  }
}
