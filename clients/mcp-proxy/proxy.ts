/**
 * The MCP side of `authz mcp-proxy`, on the official SDK's transports: at
 * start a short MCP client session to the upstream checks its tool names;
 * then each client session (stdio, or each Streamable HTTP session) gets an
 * upstream session of its own (a stdio server's own process, or a Streamable
 * HTTP session), joined to it message by message by a Relay (relay.ts).
 */
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ListToolsResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AuthzClient } from '../typescript/index.js';
import { ProxyConfigError, type ProxyConfig } from './config.js';
import { DeclaredMappings } from './declared-mappings.js';
import { OutputGate } from './output/gate.js';
import { Enforcer, type Principal } from './enforce.js';
import { Relay, type RelayEnd } from './relay.js';
import { ToolNames } from './tool-names.js';

/** Where the upstream MCP server is. */
export type UpstreamTarget =
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | {
      kind: 'http';
      url: URL;
      /** The fetch of every request to it (upstream_auth: the proxy's token). */ fetch?: FetchLike;
    };

export interface McpProxyOptions {
  config: ProxyConfig;
  authz: AuthzClient;
  upstream: UpstreamTarget;
  /** One line to the operator (stderr: stdout may be the MCP channel). */
  log: (line: string) => void;
}

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

/** A new, unstarted transport to the upstream (a stdio server's process is spawned when it starts). */
export function upstreamTransport(target: UpstreamTarget): Transport {
  if (target.kind === 'http')
    return new StreamableHTTPClientTransport(target.url, target.fetch ? { fetch: target.fetch } : undefined);
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
    const page = await upstream.request(
      { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
      ListToolsResultSchema,
    );
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/**
 * A proxy whose upstream's tool names were checked: it opens a relayed
 * upstream session for each client session.
 *
 * @example
 * ```ts
 * const proxy = await McpProxy.start({ config, authz, upstream: { kind: 'stdio', command: 'node', args: ['tools.js'] }, log: console.error });
 * await proxy.openSession(new StdioServerTransport(), { agentId: config.agent_id, sessionId: 'run-42' }, (why) => console.error(`ended by the ${why}`));
 * ```
 */
export class McpProxy {
  readonly enforcer: Enforcer;
  readonly version = packageVersion();
  readonly #options: McpProxyOptions;
  /** The upstream's tools as read at start: each session's first view. */
  readonly #startTools: Tool[];
  readonly #relays = new Set<Relay>();

  private constructor(options: McpProxyOptions, enforcer: Enforcer, startTools: Tool[]) {
    this.#options = options;
    this.enforcer = enforcer;
    this.#startTools = startTools;
  }

  /**
   * Connects to the upstream once and checks its tools' action names; that
   * connection is closed again.
   *
   * @throws ProxyConfigError when two tools would map to the same action;
   *   the SDK's error when the upstream cannot be reached.
   */
  static async start(options: McpProxyOptions): Promise<McpProxy> {
    const probe = new Client({ name: 'agent-authz-mcp-proxy', version: packageVersion() });
    const enforcer = new Enforcer({ config: options.config, authz: options.authz, log: options.log });
    await probe.connect(upstreamTransport(options.upstream));
    let tools: Tool[];
    try {
      tools = await listAllTools(probe);
      const names = tools.map((t) => t.name);
      const collisions = enforcer.actions.collisions(names);
      if (collisions.length > 0) {
        throw new ProxyConfigError(
          "the upstream's tools",
          collisions.map(
            (c) =>
              `tools ${c.tools.map((t) => JSON.stringify(t)).join(' and ')} would all be decided as ${c.action}: map them to actions of their own under "tools:" in the configuration`,
          ),
        );
      }
      for (const tool of enforcer.actions.unknownMappings(names))
        options.log(`warning: the configuration maps tool "${tool}", which the upstream does not offer`);
    } finally {
      const transport = probe.transport as (Transport & { terminateSession?: () => Promise<void> }) | undefined;
      await transport?.terminateSession?.().catch(() => undefined);
      await probe.close().catch(() => undefined);
    }
    return new McpProxy(options, enforcer, tools);
  }

  /**
   * Joins a client session's transport to a new upstream session and starts
   * both. The relay ends when either side closes (then `onEnd` is called).
   *
   * @throws the SDK's error when the upstream cannot be started (the client side is closed).
   */
  async openSession(downstream: Transport, principal: Principal, onEnd?: (why: RelayEnd) => void): Promise<Relay> {
    const names = new ToolNames(this.enforcer.actions, this.#options.log);
    names.note(this.#startTools.map((t) => t.name));
    const declared = new DeclaredMappings(this.enforcer.config, this.#options.log);
    declared.note(this.#startTools);
    const { config, authz, log } = this.#options;
    const output = config.output && new OutputGate({ config: config.output, authz, log });
    output?.noteTools(this.#startTools);
    const relay = new Relay({
      downstream,
      upstream: upstreamTransport(this.#options.upstream),
      enforcer: this.enforcer,
      principal,
      names,
      declared,
      ...(output ? { output } : {}),
      log,
    });
    this.#relays.add(relay);
    relay.onend = (why) => {
      this.#relays.delete(relay);
      onEnd?.(why);
    };
    try {
      await relay.start();
    } catch (error) {
      await relay.close('upstream');
      throw error;
    }
    return relay;
  }

  /** Client sessions relayed now (a relay leaves this count when it has ended). */
  get sessionCount(): number {
    return this.#relays.size;
  }

  /** Ends every session (their upstream processes end; pending confirms are sent first). */
  async close(): Promise<void> {
    this.enforcer.settles.flush();
    await Promise.allSettled([...this.#relays].map((r) => r.close()));
    this.enforcer.settles.flush();
  }
}
