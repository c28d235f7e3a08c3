/**
 * The configuration of `authz mcp-proxy` (docs/mcp.md#configuration): a YAML file naming the agent, the server's namespace and
 * optional per-tool mappings. Every problem is collected and reported at once,
 * with its place in the file, so the proxy stops at start with a clear message.
 *
 * ```yaml
 * agent_id: research-bot            # the agent these calls are made for
 * server: files                     # namespace of this server's actions
 * on_behalf_of: user-42             # optional; or AUTHZ_ON_BEHALF_OF
 * approval_wait_seconds: 50         # optional: how long a call awaiting a human's approval waits
 * ttl_seconds: 300                  # optional: the decisions' (and permits') lifetime
 * tools:
 *   write_file: { action: files.write, resource: "file:{path}" }
 *   charge: { action: payments.charge, resource: "customer:{customer_id}", amount: amount }
 * methods:                          # optional: the other decided requests (third part)
 *   resources/read: { action: docs.read, resource: "doc:{uri}" }
 * pass_through: [tasks/list]        # optional: request methods forwarded undecided
 * declared_mappings: true           # optional: decide tools by the server's x-authzen-mapping (declared-mappings.ts);
 *                                   # or { extra_actions: [audit.record] }: actions outside <server>. its mappings may produce
 * upstream_auth: { client_id: gw, client_secret_env: UPSTREAM_SECRET, issuer: https://login.example.com }  # optional (upstream-auth/config.ts)
 * auth: { issuer: https://login.example.com }  # optional, with --listen: agents and users from bearer tokens (auth/config.ts)
 * output: { labels: [{ tools: [inbox_read], labels: [untrusted] }], detect: { secrets: redact } }  # optional (output/config.ts)
 * ```
 */
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { ACTION_PATTERN, templateProblems, type ToolMapping } from './actions.js';
import { parseAuthConfig, type AuthConfig } from './auth/config.js';
import type { DeclaredMappingsConfig } from './declared-mappings.js';
import { parseOutputConfig, type OutputConfig } from './output/config.js';
import { isDecidedMethod, KNOWN_METHODS, type MethodMappings } from './methods.js';
import { parseUpstreamAuth, type UpstreamAuthConfig } from './upstream-auth/config.js';

/** How one tool's calls become decisions (defined beside the action map that reads it). */
export type { ToolMapping };

export interface ProxyConfig {
  /** The agent of every decision; required unless `auth:` takes it from each request's token. */
  agent_id?: string;
  /** Namespace of the server's actions (an unmapped tool's action is `<server>.<tool>`). */
  server: string;
  on_behalf_of?: string;
  /** Longest wait, in seconds, for a human's approval of a decision that awaits it. */
  approval_wait_seconds: number;
  /** Lifetime of each decision and its permit (1..3600); the service's default when absent. */
  ttl_seconds?: number;
  /** Per-tool mappings, by the upstream's tool name. */
  tools: Record<string, ToolMapping>;
  /** Mappings of the other decided methods (`resources/read`, `prompts/get`...): action and resource template over the params. */
  methods: MethodMappings;
  /** Request methods the proxy does not know that are forwarded undecided (else refused). */
  pass_through: string[];
  /** Decide tools by the mappings the server declares in their input schemas (COAZ-MCP); absent: not (`false`). */
  declared_mappings?: DeclaredMappingsConfig;
  /** Client credentials for an upstream over Streamable HTTP that wants a token. */
  upstream_auth?: UpstreamAuthConfig;
  /** Identity from tokens over HTTP (issue 31): each request's agent and user come from its bearer token. */
  auth?: AuthConfig;
  /** What results are read for: labels by tool, server labels, detectors (issue 48; output/config.ts). Absent: results are relayed unread. */
  output?: OutputConfig;
}

/** Default `approval_wait_seconds`: below the 60 s default request timeout of MCP SDK clients. */
export const DEFAULT_APPROVAL_WAIT_SECONDS = 50;

/** A configuration that cannot be used; `problems` lists every reason, one line each. */
export class ProxyConfigError extends Error {
  readonly code = 'mcp_proxy.invalid_config';
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(
      `${source}: ${problems.length === 1 ? problems[0] : `${problems.length} problems:\n  ${problems.join('\n  ')}`}`,
    );
    this.name = 'ProxyConfigError';
  }
}

const TOP_LEVEL = new Set([
  'agent_id',
  'server',
  'on_behalf_of',
  'approval_wait_seconds',
  'ttl_seconds',
  'tools',
  'methods',
  'pass_through',
  'declared_mappings',
  'upstream_auth',
  'auth',
  'output',
]);
const TOOL_FIELDS = new Set(['action', 'resource', 'amount']);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown, max = 256): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= max;

/**
 * Checks a parsed configuration value and answers the typed configuration.
 * `env.AUTHZ_ON_BEHALF_OF` fills `on_behalf_of` when the file has none.
 *
 * @throws ProxyConfigError listing every problem.
 *
 * @example
 * ```ts
 * const config = parseProxyConfig({ agent_id: 'research-bot', server: 'files', tools: { write_file: { action: 'files.write', resource: 'file:{path}' } } });
 * console.log(config.tools.write_file?.action, config.approval_wait_seconds); // => files.write 50
 * ```
 */
export function parseProxyConfig(value: unknown, source = 'config', env: NodeJS.ProcessEnv = {}): ProxyConfig {
  const problems: string[] = [];
  if (!isRecord(value))
    throw new ProxyConfigError(source, ['the configuration must be a YAML mapping (agent_id, server, tools...)']);
  for (const key of Object.keys(value))
    if (!TOP_LEVEL.has(key)) problems.push(`unknown field "${key}" (known: ${[...TOP_LEVEL].join(', ')})`);

  const auth = value.auth === undefined ? undefined : parseAuthConfig(value.auth, problems);
  if (value.agent_id !== undefined || value.auth === undefined) {
    if (!nonEmpty(value.agent_id))
      problems.push(
        `agent_id: ${value.auth === undefined ? 'required, ' : ''}a non-empty string of at most 256 characters`,
      );
  }
  if (!nonEmpty(value.server, 100))
    problems.push("server: required, a non-empty string (the namespace of this server's actions)");
  const onBehalfOf = value.on_behalf_of ?? (env.AUTHZ_ON_BEHALF_OF || undefined);
  if (onBehalfOf !== undefined && !nonEmpty(onBehalfOf))
    problems.push('on_behalf_of: a non-empty string of at most 256 characters');

  const wait = value.approval_wait_seconds ?? DEFAULT_APPROVAL_WAIT_SECONDS;
  if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 0 || wait > 3600)
    problems.push('approval_wait_seconds: a whole number of seconds, 0..3600');
  const ttl = value.ttl_seconds;
  if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > 3600))
    problems.push('ttl_seconds: a whole number of seconds, 1..3600');

  const tools: Record<string, ToolMapping> = {};
  const rawTools = value.tools ?? {};
  if (!isRecord(rawTools)) problems.push('tools: a mapping from tool names to { action, resource, amount }');
  else {
    for (const [tool, raw] of Object.entries(rawTools)) {
      const at = `tools.${tool}`;
      if (!isRecord(raw)) {
        problems.push(`${at}: a mapping with action, resource and/or amount`);
        continue;
      }
      for (const key of Object.keys(raw))
        if (!TOOL_FIELDS.has(key)) problems.push(`${at}: unknown field "${key}" (known: action, resource, amount)`);
      const mapping: ToolMapping = {};
      if (raw.action !== undefined) {
        if (typeof raw.action !== 'string' || !ACTION_PATTERN.test(raw.action)) {
          problems.push(
            `${at}.action: ${JSON.stringify(raw.action)} is not an action: namespace.verb, each part [a-z][a-z0-9_]* (no wildcards)`,
          );
        } else mapping.action = raw.action;
      }
      if (raw.resource !== undefined) {
        if (typeof raw.resource !== 'string' || raw.resource === '')
          problems.push(`${at}.resource: a non-empty template string such as "file:{path}"`);
        else {
          for (const p of templateProblems(raw.resource)) problems.push(`${at}.resource: ${p}`);
          mapping.resource = raw.resource;
        }
      }
      if (raw.amount !== undefined) {
        if (!nonEmpty(raw.amount)) problems.push(`${at}.amount: the name of the argument that carries the amount`);
        else mapping.amount = raw.amount;
      }
      tools[tool] = mapping;
    }
  }
  const methods = parseMethods(value.methods, problems);
  const passThrough = value.pass_through ?? [];
  if (!Array.isArray(passThrough) || passThrough.some((m) => !nonEmpty(m)))
    problems.push('pass_through: a list of JSON-RPC method names');
  else
    for (const m of passThrough as string[])
      if (KNOWN_METHODS.has(m))
        problems.push(`pass_through: "${m}" is a method the proxy knows (it is decided or relayed already)`);
  const declared = parseDeclaredMappings(value.declared_mappings, problems);
  const upstreamAuth = parseUpstreamAuth(value.upstream_auth, problems);
  const output = parseOutputConfig(value.output, problems);
  if (problems.length > 0) throw new ProxyConfigError(source, problems);
  return {
    ...(value.agent_id === undefined ? {} : { agent_id: value.agent_id as string }),
    server: value.server as string,
    ...(onBehalfOf === undefined ? {} : { on_behalf_of: onBehalfOf as string }),
    approval_wait_seconds: wait as number,
    ...(ttl === undefined ? {} : { ttl_seconds: ttl as number }),
    tools,
    methods,
    pass_through: passThrough as string[],
    ...(declared === undefined ? {} : { declared_mappings: declared }),
    ...(upstreamAuth === undefined ? {} : { upstream_auth: upstreamAuth }),
    ...(auth ? { auth } : {}),
    ...(output ? { output } : {}),
  };
}

/** The `declared_mappings:` section: `true`, `false`, or `{ extra_actions: [...] }`; problems go to `problems`. */
function parseDeclaredMappings(raw: unknown, problems: string[]): DeclaredMappingsConfig | undefined {
  if (raw === undefined || raw === false) return undefined;
  if (raw === true) return { extra_actions: [] };
  const usage =
    "declared_mappings: true, false, or { extra_actions: [...] } (actions outside this server's namespace its mappings may produce)";
  if (!isRecord(raw)) {
    problems.push(usage);
    return undefined;
  }
  for (const key of Object.keys(raw))
    if (key !== 'extra_actions') problems.push(`declared_mappings: unknown field "${key}" (known: extra_actions)`);
  const extra = raw.extra_actions ?? [];
  if (!Array.isArray(extra)) {
    problems.push('declared_mappings.extra_actions: a list of actions (namespace.verb)');
    return undefined;
  }
  for (const action of extra) {
    if (typeof action !== 'string' || !ACTION_PATTERN.test(action))
      problems.push(
        `declared_mappings.extra_actions: ${JSON.stringify(action)} is not an action: namespace.verb, each part [a-z][a-z0-9_]* (no wildcards)`,
      );
  }
  return { extra_actions: [...new Set(extra as string[])] };
}

/** The `methods:` mappings; problems go to `problems`. */
function parseMethods(raw: unknown, problems: string[]): ProxyConfig['methods'] {
  const methods: ProxyConfig['methods'] = {};
  if (raw === undefined) return methods;
  if (!isRecord(raw)) {
    problems.push('methods: a mapping from request methods (resources/read, prompts/get...) to { action, resource }');
    return methods;
  }
  for (const [method, entry] of Object.entries(raw)) {
    const at = `methods.${method}`;
    if (!isDecidedMethod(method)) {
      problems.push(
        `${at}: not a decided method (resources/read, resources/subscribe, prompts/get, completion/complete, logging/setLevel; tools/call is mapped under "tools:")`,
      );
      continue;
    }
    if (!isRecord(entry)) {
      problems.push(`${at}: a mapping with action and/or resource`);
      continue;
    }
    for (const key of Object.keys(entry))
      if (key !== 'action' && key !== 'resource')
        problems.push(`${at}: unknown field "${key}" (known: action, resource)`);
    const mapping: { action?: string; resource?: string } = {};
    if (entry.action !== undefined) {
      if (typeof entry.action !== 'string' || !ACTION_PATTERN.test(entry.action))
        problems.push(
          `${at}.action: ${JSON.stringify(entry.action)} is not an action: namespace.verb, each part [a-z][a-z0-9_]* (no wildcards)`,
        );
      else mapping.action = entry.action;
    }
    if (entry.resource !== undefined) {
      if (typeof entry.resource !== 'string' || entry.resource === '')
        problems.push(`${at}.resource: a non-empty template string such as "doc:{uri}"`);
      else {
        for (const p of templateProblems(entry.resource)) problems.push(`${at}.resource: ${p}`);
        mapping.resource = entry.resource;
      }
    }
    methods[method] = mapping;
  }
  return methods;
}

/**
 * Reads and checks the YAML configuration file.
 *
 * @throws ProxyConfigError (unreadable file, YAML errors with their line, every invalid field).
 *
 * @example
 * ```ts
 * const config = loadProxyConfig('mcp.yaml', process.env);
 * console.log(config.agent_id); // => research-bot
 * ```
 */
export function loadProxyConfig(path: string, env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ProxyConfigError(path, [`cannot read the file: ${(e as Error).message}`]);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0)
    throw new ProxyConfigError(
      path,
      doc.errors.map((e) => e.message.split('\n')[0]!),
    );
  return parseProxyConfig(doc.toJS(), path, env);
}
