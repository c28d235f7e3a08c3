/**
 * `authz mcp-proxy`: stands between an MCP client and an MCP server, relaying
 * the whole protocol and asking agent-authz before every tool call and every
 * other decided request (docs/mcp.md#what-the-proxy-does,
 * docs/mcp.md#one-gateway-for-many-agents).
 *
 *   authz mcp-proxy --config mcp.yaml -- <upstream command> [args...]   # upstream over stdio
 *   authz mcp-proxy --config mcp.yaml --upstream-url http://host/mcp     # upstream over Streamable HTTP
 *
 * It speaks MCP over stdio to its client (stdout is the MCP channel; messages
 * go to stderr), or over Streamable HTTP with `--listen HOST:PORT`; with
 * `auth:` in the configuration that listener takes each request's agent and
 * user from its bearer token (auth/gate.ts). Exit codes: 0 the client went
 * away (or a signal ended the listener), 1 the configuration or the upstream's
 * tool names are unusable, or the upstream could not be reached or went away,
 * 2 usage error (a non-loopback --listen address without auth:, and auth:
 * without --listen, included).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { AuthzClient } from '../typescript/index.js';
import { loadProxyConfig, ProxyConfigError, type ProxyConfig } from './config.js';
import { TokenGate } from './auth/gate.js';
import {
  DEFAULT_MAX_SESSIONS,
  DEFAULT_SESSION_IDLE_SECONDS,
  defaultMaxSessionsPerIdentity,
  isLoopback,
  listenStreamableHttp,
  parseListen,
  type Identity,
} from './http-listen.js';
import { McpProxy, type UpstreamTarget } from './proxy.js';
import type { RelayEnd } from './relay.js';
import { upstreamAuthFetch } from './upstream-auth/index.js';

export const MCP_PROXY_USAGE = `usage: authz mcp-proxy --config FILE [options] -- COMMAND [ARGS...]
       authz mcp-proxy --config FILE [options] --upstream-url URL
  --config FILE        the proxy's YAML configuration (agent_id or auth:, server, tools)
  --upstream-url URL   the upstream MCP server over Streamable HTTP (instead of COMMAND)
  --listen HOST:PORT   serve MCP over Streamable HTTP at http://HOST:PORT/mcp (default: stdio);
                       a loopback address only, unless the configuration has auth:
  --public-url URL     the MCP endpoint as clients reach it (default http://HOST:PORT/mcp)
  --session-idle-seconds N   end an HTTP session after N seconds without a request (default 600)
  --max-sessions N     at most N HTTP sessions at once (default 1000)
  --max-sessions-per-identity N   with auth:, at most N of them for one agent and user
                       (default a tenth of --max-sessions, at least 1)
  --url URL            the agent-authz service (default AUTHZ_URL or http://127.0.0.1:8080)
  --key KEY            an API key with scope decisions:write (default AUTHZ_API_KEY)
  --session ID         the decisions' session_id, shared by every proxy of one agent run
                       (default AUTHZ_SESSION_ID, else a fresh id per process); not with
                       --listen, where each MCP session is its own: mcp-<Mcp-Session-Id>
  --help, -h           this usage
configuration keys: agent_id, server, tools, methods:, pass_through:, declared_mappings,
  auth: (with --listen: agents and users from bearer tokens), upstream_auth, output: (labels
  and detectors for results) (docs/mcp.md)
exit codes: 0 the client went away or a signal ended the listener, 1 configuration
  or upstream problems, 2 usage error`;

const DEFAULT_URL = 'http://127.0.0.1:8080';
export const EXIT_OK = 0;
export const EXIT_PROBLEMS = 1;
export const EXIT_USAGE = 2;

/**
 * Whether the arguments ask for the usage: `--help` or `-h` before any `--`
 * (after it they belong to the upstream command). The compiler's CLI has the
 * same rule (compiler/cli/io.ts), which the clients may not import.
 */
function wantsHelp(argv: readonly string[]): boolean {
  for (const a of argv) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}

/** Variables the upstream process does not inherit: the proxy's credentials are not the tools' business. */
const WITHHELD_ENV = ['AUTHZ_API_KEY', 'AUTHZ_ADMIN_TOKEN'];

export interface ProxyIo {
  /** One line of operator output (stderr). */
  err(text: string): void;
}

const stderrIo: ProxyIo = { err: (text) => void process.stderr.write(text.endsWith('\n') ? text : `${text}\n`) };

interface Invocation {
  configPath: string;
  url: string;
  key: string;
  /** The decisions' session_id when set by --session or AUTHZ_SESSION_ID. */
  sessionId?: string;
  listen?: {
    host: string;
    port: number;
    publicUrl?: URL;
    idleSeconds: number;
    maxSessions: number;
    maxSessionsPerIdentity: number;
  };
  upstream: UpstreamTarget;
}

/** A whole number flag within bounds. */
function wholeNumber(flag: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw new UsageProblem(`${flag} ${JSON.stringify(value)}: a whole number from ${min} to ${max}`);
  return n;
}

class UsageProblem extends Error {}

/** The flags before `--`, and the upstream command after it. */
function readInvocation(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  const dash = argv.indexOf('--');
  const own = dash < 0 ? [...argv] : argv.slice(0, dash);
  const command = dash < 0 ? [] : argv.slice(dash + 1);
  const { values, positionals } = parseArgs({
    args: own,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      'upstream-url': { type: 'string' },
      listen: { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      session: { type: 'string' },
      'public-url': { type: 'string' },
      'session-idle-seconds': { type: 'string' },
      'max-sessions': { type: 'string' },
      'max-sessions-per-identity': { type: 'string' },
    },
  });
  if (positionals.length > 0)
    throw new UsageProblem(`unexpected ${JSON.stringify(positionals[0])}: put the upstream command after --`);
  if (!values.config) throw new UsageProblem('missing --config FILE');
  const key = values.key || env.AUTHZ_API_KEY;
  if (!key) throw new UsageProblem('give --key or set AUTHZ_API_KEY');
  const url = (values.url || env.AUTHZ_URL || DEFAULT_URL).replace(/\/+$/, '');
  if (!URL.canParse(url)) throw new UsageProblem(`--url ${JSON.stringify(url)} is not a URL`);
  let upstream: UpstreamTarget;
  if (values['upstream-url'] !== undefined) {
    if (command.length > 0) throw new UsageProblem('give either --upstream-url or a command after --, not both');
    if (!URL.canParse(values['upstream-url']))
      throw new UsageProblem(`--upstream-url ${JSON.stringify(values['upstream-url'])} is not a URL`);
    upstream = { kind: 'http', url: new URL(values['upstream-url']) };
  } else {
    if (command.length === 0) throw new UsageProblem('missing the upstream: a command after -- or --upstream-url URL');
    const childEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries(env)) if (v !== undefined && !WITHHELD_ENV.includes(k)) childEnv[k] = v;
    upstream = { kind: 'stdio', command: command[0]!, args: command.slice(1), env: childEnv };
  }
  let listen: Invocation['listen'];
  if (values.listen !== undefined) {
    const at = parseListen(values.listen);
    if (!at)
      throw new UsageProblem(`--listen ${JSON.stringify(values.listen)}: expected HOST:PORT, e.g. 127.0.0.1:8090`);
    const publicUrl = values['public-url'];
    if (publicUrl !== undefined && !(URL.canParse(publicUrl) && /^https?:$/.test(new URL(publicUrl).protocol)))
      throw new UsageProblem(`--public-url ${JSON.stringify(publicUrl)} is not an http(s) URL`);
    const maxSessions = wholeNumber('--max-sessions', values['max-sessions'], DEFAULT_MAX_SESSIONS, 1, 1_000_000);
    listen = {
      ...at,
      ...(publicUrl === undefined ? {} : { publicUrl: new URL(publicUrl) }),
      idleSeconds: wholeNumber(
        '--session-idle-seconds',
        values['session-idle-seconds'],
        DEFAULT_SESSION_IDLE_SECONDS,
        1,
        86_400,
      ),
      maxSessions,
      maxSessionsPerIdentity: wholeNumber(
        '--max-sessions-per-identity',
        values['max-sessions-per-identity'],
        defaultMaxSessionsPerIdentity(maxSessions),
        1,
        maxSessions,
      ),
    };
    // Each MCP session is its own session: one id for all of them would merge their labels and history.
    if (values.session !== undefined)
      throw new UsageProblem(
        '--session goes without --listen: with --listen each MCP session is its own session (mcp-<Mcp-Session-Id>)',
      );
  } else {
    for (const flag of ['public-url', 'session-idle-seconds', 'max-sessions', 'max-sessions-per-identity'] as const)
      if (values[flag] !== undefined) throw new UsageProblem(`--${flag} goes with --listen`);
  }
  // AUTHZ_SESSION_ID is the agent host's run, for its stdio proxies; a listener serves many sessions and ignores it.
  const sessionId = listen ? undefined : values.session || env.AUTHZ_SESSION_ID || undefined;
  return {
    configPath: values.config,
    url,
    key,
    upstream,
    ...(sessionId ? { sessionId } : {}),
    ...(listen ? { listen } : {}),
  };
}

/**
 * Why the listener may not start with this configuration (docs/mcp.md#command-line): without `auth:` only loopback addresses (whoever reached another
 * would call tools as the configured agent); `auth:` only with `--listen`.
 */
function authListenProblem(invocation: Invocation, config: ProxyConfig): string | undefined {
  const listen = invocation.listen;
  if (config.auth && !listen)
    return 'auth: in the configuration checks the tokens of HTTP requests: it needs --listen HOST:PORT';
  if (listen && !config.auth && !isLoopback(listen.host)) {
    return `--listen ${listen.host}:${listen.port}: without auth: in the configuration the proxy serves loopback addresses only (127.0.0.1, ::1, localhost): whoever reached it would call tools as the configured agent`;
  }
  return undefined;
}

/** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
function signalled(): { promise: Promise<void>; dispose(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  const on = () => resolve();
  process.once('SIGINT', on);
  process.once('SIGTERM', on);
  return { promise, dispose: () => (process.off('SIGINT', on), process.off('SIGTERM', on)) };
}

/**
 * Under --listen, sessions of seconds or minutes come and go by the thousand:
 * each is promoted to V8's old generation and dies there, and V8 grew that
 * generation to several times what was alive and kept it while idle
 * (bench:mcp-sessions: RSS +94 MiB after 20,000 sessions with the heap in use
 * flat at 25 MiB after a full GC; with this flag +7 MiB). `--optimize-for-size`
 * makes V8 grow its heap conservatively (and collect sooner): memory over a
 * little speed, for a process that lives on.
 */
function keepHeapSmall(): void {
  setFlagsFromString('--optimize-for-size');
}

/**
 * Runs the proxy until its client goes away (stdio), a signal ends it, or the
 * upstream closes. bin/authz.js calls it with the arguments after `mcp-proxy`.
 *
 * @returns the exit code (see the module comment).
 *
 * @example
 * ```ts
 * // authz mcp-proxy --config mcp.yaml -- node tools-server.js
 * process.exitCode = await mcpProxyCommand(['--config', 'mcp.yaml', '--', 'node', 'tools-server.js']);
 * ```
 */
export async function mcpProxyCommand(
  argv: readonly string[],
  io: ProxyIo = stderrIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const say = (line: string) => io.err(`authz mcp-proxy: ${line}`);
  if (wantsHelp(argv)) {
    process.stdout.write(`${MCP_PROXY_USAGE}\n`);
    return EXIT_OK;
  }
  let invocation: Invocation;
  let config: ProxyConfig;
  try {
    invocation = readInvocation(argv, env);
  } catch (e) {
    if (!(e instanceof UsageProblem) && !(e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw e;
    io.err(`authz mcp-proxy: ${(e as Error).message}\n\n${MCP_PROXY_USAGE}`);
    return EXIT_USAGE;
  }
  try {
    config = loadProxyConfig(invocation.configPath, env);
    if (config.upstream_auth) {
      const { upstream } = invocation;
      const { fetch } = upstreamAuthFetch(
        config.upstream_auth,
        upstream.kind === 'http' ? upstream.url : undefined,
        env,
      );
      if (upstream.kind === 'http') invocation.upstream = { ...upstream, fetch };
    }
  } catch (e) {
    if (!(e instanceof ProxyConfigError)) throw e;
    say(`invalid configuration ${e.message}`);
    return EXIT_PROBLEMS;
  }
  const listenProblem = authListenProblem(invocation, config);
  if (listenProblem) {
    io.err(`authz mcp-proxy: ${listenProblem}\n\n${MCP_PROXY_USAGE}`);
    return EXIT_USAGE;
  }
  if (invocation.listen) keepHeapSmall();

  const authz = new AuthzClient({
    baseUrl: invocation.url,
    apiKey: invocation.key,
    // A 429 is answered to the agent with its Retry-After at once, never waited for here.
    maxRetryAfterSeconds: 0,
  });
  let proxy: McpProxy;
  try {
    proxy = await McpProxy.start({ config, authz, upstream: invocation.upstream, log: say });
  } catch (e) {
    if (e instanceof ProxyConfigError) say(`cannot start: ${e.message}`);
    else say(`cannot connect to the upstream MCP server: ${(e as Error).message}`);
    return EXIT_PROBLEMS;
  }
  // With auth:, the agent and the user are the token's (identity); else the configuration's.
  const principal = (sessionId: string, identity?: Identity) => ({
    agentId: identity?.agentId ?? config.agent_id!,
    sessionId: invocation.sessionId ?? sessionId,
    ...(identity
      ? identity.onBehalfOf === undefined
        ? {}
        : { onBehalfOf: identity.onBehalfOf }
      : config.on_behalf_of === undefined
        ? {}
        : { onBehalfOf: config.on_behalf_of }),
    ...(identity?.claims ? { claims: identity.claims } : {}),
  });

  const stop = signalled();
  try {
    if (invocation.listen) {
      const { host, port, publicUrl, idleSeconds, maxSessions, maxSessionsPerIdentity } = invocation.listen;
      const who = config.auth
        ? `agents and users from the tokens of ${config.auth.issuer}`
        : `agent ${config.agent_id}`;
      say(`${who}, server ${config.server}, session mcp-<Mcp-Session-Id>, decisions from ${invocation.url}`);
      const gate = config.auth ? new TokenGate({ config: config.auth, log: say }) : undefined;
      // The public URL is known before listening unless the port is chosen by the system (0).
      if (gate && (publicUrl || port !== 0))
        gate.bind(publicUrl ?? new URL(`http://${host.includes(':') ? `[${host}]` : host}:${port}/mcp`));
      const listening = await listenStreamableHttp({
        host,
        port,
        idleSeconds,
        maxSessions,
        maxSessionsPerIdentity,
        ...(publicUrl ? { publicUrl } : {}),
        ...(gate ? { gate } : {}),
        log: say,
        openSession: (transport, id, onEnd, identity) =>
          proxy.openSession(transport, principal(`mcp-${id}`, identity), onEnd),
      }).catch((e: Error) => {
        say(`cannot listen on ${host}:${port}: ${e.message}`);
        return null;
      });
      if (!listening) return EXIT_PROBLEMS;
      if (gate && !publicUrl && port === 0) gate.bind(new URL(listening.url));
      if (gate) say(`tokens from ${config.auth!.issuer} for ${gate.resource}; metadata at ${gate.metadataUrl}`);
      say(`listening on ${listening.url}`);
      await stop.promise;
      await listening.close();
      return EXIT_OK;
    }
    const sessionId = invocation.sessionId ?? `mcp-${randomUUID()}`;
    say(`agent ${config.agent_id}, server ${config.server}, session ${sessionId}, decisions from ${invocation.url}`);
    let ended!: (why: RelayEnd) => void;
    const sessionEnded = new Promise<RelayEnd>((resolve) => (ended = resolve));
    process.stdin.once('end', () => ended('client'));
    process.stdin.once('close', () => ended('client'));
    try {
      await proxy.openSession(new StdioServerTransport(), principal(sessionId), (why) => ended(why));
    } catch (e) {
      say(`cannot start the upstream MCP server: ${(e as Error).message}`);
      return EXIT_PROBLEMS;
    }
    const why = await Promise.race([sessionEnded, stop.promise.then(() => 'closed' as const)]);
    if (why === 'upstream') say('the upstream MCP server went away');
    return why === 'upstream' ? EXIT_PROBLEMS : EXIT_OK;
  } finally {
    stop.dispose();
    await proxy.close();
  }
}
