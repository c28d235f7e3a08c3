/**
 * `authz mcp-proxy` as the MCP gateway (docs/mcp.md#6-resources-and-prompts-decided), end to end with
 * no mocks: a real service on loopback, the real proxy (`node bin/authz.js
 * mcp-proxy`), our everything server behind it (fixtures/everything-server.mjs,
 * which records every request and notification it receives) and the SDK's own
 * client in front, over stdio and over Streamable HTTP on both sides.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ProgressNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { freePort, startChild, stopChild } from '../../scripts/mcp-conformance.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { BIN, childEnv, ensureProxyBuilt, textOf } from './helpers/proxy.js';
import { agent as kitAgent } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

const SERVER = join(import.meta.dirname, 'fixtures', 'everything-server.mjs');
const agent = (tag: string) => kitAgent(`gw-${tag}`);

interface Recorded {
  session: string;
  method: string;
  params: JsonObject | null;
}

/** A poll, bounded: the value once `ready` holds. */
async function until<T>(read: () => T | Promise<T>, ready: (v: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await read();
    if (ready(v)) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never: ${what}`);
}

/** The JSON-RPC error a promise rejects with. */
async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

/** A client that samples, elicits and lists roots as `who`. */
function clientAs(who: string): Client {
  const client = new Client(
    { name: `gateway-test-${who}`, version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    model: 'test',
    content: { type: 'text', text: `sampled by ${who}` },
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({
    action: 'accept',
    content: { username: who, email: `${who}@example.com` },
  }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: `file:///home/${who}`, name: who }],
  }));
  return client;
}

describe('authz mcp-proxy: the MCP gateway', () => {
  let rt: TestRuntime;
  let base: string;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('postgres');
    const tools = [
      'test_simple_text',
      'test_sampling',
      'test_elicitation',
      'test_roots',
      'test_tool_with_logging',
      'test_tool_with_progress',
      'add_note',
      'add_note_variant',
    ];
    await rt.setPolicies([
      { id: 'pol_gw_tools', effect: 'allow', agents: ['gw-*'], actions: tools.map((t) => `docs.${t}`) },
      {
        id: 'pol_gw_read',
        effect: 'allow',
        agents: ['gw-*'],
        actions: ['docs.resources_read'],
        resources: ['test://static-*', 'test://watched-resource'],
      },
      {
        id: 'pol_gw_prompt',
        effect: 'allow',
        agents: ['gw-*'],
        actions: ['docs.prompts_get'],
        resources: ['prompt:test_prompt_with_arguments'],
        condition: "context.mcp.arguments.arg1 == 'hello'",
      },
      {
        id: 'pol_gw_complete',
        effect: 'allow',
        agents: ['gw-*'],
        actions: ['docs.completion_complete'],
        resources: ['prompt:*'],
      },
      {
        id: 'pol_gw_mapped',
        effect: 'allow',
        agents: ['gw-mapped-*'],
        actions: ['library.read'],
        resources: ['doc:test://static-text'],
      },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await rt?.close();
  });

  const decisionsOf = async (agentId: string) =>
    (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}&limit=100`)).data as Array<JsonObject>;

  /** A scratch folder with the configuration and the server's record file. */
  function scratch(agentId: string, extra = '') {
    const dir = mkdtempSync(join(tmpdir(), 'authz-gateway-'));
    const config = join(dir, 'mcp.yaml');
    writeFileSync(config, `agent_id: ${agentId}\nserver: docs\n${extra}`);
    const record = join(dir, 'record.jsonl');
    writeFileSync(record, '');
    /** What the server received, without the proxy's start-up check of the tool names (the first session). */
    const recorded = (): Recorded[] => {
      const all = readFileSync(record, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Recorded);
      return all.filter((r) => r.session !== all[0]!.session);
    };
    return { config, record, recorded };
  }

  /** The proxy over stdio, with the everything server over stdio behind it. */
  async function overStdio(agentId: string, options: { extra?: string; url?: string } = {}) {
    const files = scratch(agentId, options.extra);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp-proxy', '--config', files.config, '--', process.execPath, SERVER],
      env: childEnv({ AUTHZ_URL: options.url ?? base, AUTHZ_API_KEY: rt.testKey, RECORD_FILE: files.record }),
      stderr: 'pipe',
    });
    const client = clientAs('stdio');
    await client.connect(transport);
    stops.push(() => client.close());
    return { client, recorded: files.recorded };
  }

  /** The everything server over HTTP, and the proxy listening on HTTP in front of it. */
  async function overHttp(agentId: string, options: { extra?: string; url?: string; flags?: string[] } = {}) {
    const files = scratch(agentId, options.extra);
    const upstream = await startChild(process.execPath, [SERVER, '--http'], {
      env: childEnv({ RECORD_FILE: files.record }),
      ready: (l) => (l.startsWith('{') ? (JSON.parse(l) as { url: string }).url : undefined),
    });
    stops.push(() => stopChild(upstream.child));
    const proxy = await startChild(
      process.execPath,
      [
        BIN,
        'mcp-proxy',
        '--config',
        files.config,
        '--listen',
        '127.0.0.1:0',
        '--upstream-url',
        upstream.value,
        '--url',
        options.url ?? base,
        '--key',
        rt.testKey,
        ...(options.flags ?? []),
      ],
      { env: childEnv({}), ready: (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1] },
    );
    stops.push(() => stopChild(proxy.child));
    const connect = async (who: string) => {
      const client = clientAs(who);
      await client.connect(new StreamableHTTPClientTransport(new URL(proxy.value)));
      stops.push(() => client.close());
      return client;
    };
    return {
      url: proxy.value,
      connect,
      client: await connect('http'),
      recorded: files.recorded,
      proxyOutput: proxy.output,
    };
  }

  describe.each(['stdio', 'http'] as const)('over %s', (kind) => {
    const open = (agentId: string, options: { extra?: string; url?: string } = {}) =>
      kind === 'stdio' ? overStdio(agentId, options) : overHttp(agentId, options);

    it('each decided method: allowed ones are forwarded with the decision and confirmed, denied ones never reach the server', async () => {
      const agentId = agent(kind);
      const { client, recorded } = await open(agentId);
      const reached = (method: string) => recorded().filter((r) => r.method === method);

      // resources/read: allowed for test://static-*, denied for the template.
      const read = await client.readResource({ uri: 'test://static-text' });
      expect(read.contents[0]).toMatchObject({ text: 'This is the content of the static text resource.' });
      const deniedRead = await rpcError(client.readResource({ uri: 'test://template/7/data' }));
      expect(deniedRead.code).toBe(-32001);
      expect(deniedRead.data).toMatchObject({
        reason: 'resource.not_allowed',
        decision_id: expect.stringMatching(/^dec_/),
      });
      expect(deniedRead.message).toContain(
        `resource.not_allowed (decision ${(deniedRead.data as { decision_id: string }).decision_id})`,
      );
      expect(reached('resources/read').map((r) => r.params!.uri)).toEqual(['test://static-text']);

      // resources/subscribe: decided as resources_read on the URI.
      await expect(client.subscribeResource({ uri: 'test://watched-resource' })).resolves.toEqual({});
      expect((await rpcError(client.subscribeResource({ uri: 'test://elsewhere' }))).data).toMatchObject({
        reason: 'resource.not_allowed',
      });
      expect(reached('resources/subscribe').map((r) => r.params!.uri)).toEqual(['test://watched-resource']);
      // resources/unsubscribe is not decided.
      await expect(client.unsubscribeResource({ uri: 'test://watched-resource' })).resolves.toEqual({});

      // prompts/get: the condition reads context.mcp.arguments.
      const prompt = await client.getPrompt({
        name: 'test_prompt_with_arguments',
        arguments: { arg1: 'hello', arg2: 'world' },
      });
      expect(prompt.messages[0]!.content).toMatchObject({ text: "Prompt with arguments: arg1='hello', arg2='world'" });
      expect(
        (
          await rpcError(
            client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'bye', arg2: 'world' } }),
          )
        ).data,
      ).toMatchObject({
        reason: 'policy.not_found',
      });
      expect((await rpcError(client.getPrompt({ name: 'test_simple_prompt' }))).code).toBe(-32001);
      expect(reached('prompts/get').map((r) => r.params!.arguments?.arg1)).toEqual(['hello']);

      // completion/complete: allowed on prompts, denied on a resource template.
      const completion = await client.complete({
        ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        argument: { name: 'arg1', value: 'al' },
      });
      expect(completion.completion.values).toEqual(['alpha']);
      expect(
        (
          await rpcError(
            client.complete({
              ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
              argument: { name: 'id', value: '1' },
            }),
          )
        ).code,
      ).toBe(-32001);
      expect(reached('completion/complete')).toHaveLength(1);

      // logging/setLevel: no policy allows it.
      expect((await rpcError(client.setLoggingLevel('debug'))).data).toMatchObject({ reason: 'policy.not_found' });
      expect(reached('logging/setLevel')).toEqual([]);

      // tools/call, allowed and denied (test_image_content has no policy).
      expect(textOf(await client.callTool({ name: 'test_simple_text', arguments: {} }))).toBe(
        'This is a simple text response for testing.',
      );
      const deniedCall = await client.callTool({ name: 'test_image_content', arguments: {} });
      expect(deniedCall.isError).toBe(true);
      expect(reached('tools/call').map((r) => r.params!.name)).toEqual(['test_simple_text']);

      // Every forwarded request carried its decision and permit; every decision is settled by its answer.
      for (const r of recorded().filter((x) =>
        ['resources/read', 'resources/subscribe', 'prompts/get', 'completion/complete', 'tools/call'].includes(
          x.method,
        ),
      )) {
        expect(r.params!._meta).toMatchObject({
          'agent-authz/decision': expect.stringMatching(/^dec_/),
          'agent-authz/permit': expect.stringMatching(/^eyJ/),
        });
      }
      const decisions = await until(
        () => decisionsOf(agentId),
        (ds) => ds.every((d) => d.status !== 'pending'),
        'every decision confirmed, rejected or denied',
      );
      const byResource = (action: string, resource: string | null) =>
        decisions.find((d) => d.action === action && d.resource === resource);
      expect(byResource('docs.resources_read', 'test://static-text')).toMatchObject({
        status: 'confirmed',
        session_id: expect.stringMatching(/^mcp-/),
        context: { mcp: { server: 'docs', method: 'resources/read', uri: 'test://static-text' } },
      });
      expect(
        decisions.find((d) => d.context?.mcp?.method === 'resources/subscribe' && d.effect === 'allow'),
      ).toMatchObject({ action: 'docs.resources_read', status: 'confirmed' });
      expect(decisions.find((d) => d.action === 'docs.prompts_get' && d.effect === 'allow')).toMatchObject({
        resource: 'prompt:test_prompt_with_arguments',
        context: {
          mcp: {
            method: 'prompts/get',
            prompt: 'test_prompt_with_arguments',
            arguments: { arg1: 'hello', arg2: 'world' },
          },
        },
      });
      expect(decisions.find((d) => d.action === 'docs.completion_complete' && d.effect === 'allow')).toMatchObject({
        resource: 'prompt:test_prompt_with_arguments',
        status: 'confirmed',
        context: { mcp: { ref: { type: 'ref/prompt' }, argument: { name: 'arg1', value: 'al' } } },
      });
      expect(decisions.find((d) => d.action === 'docs.logging_setlevel')).toMatchObject({
        effect: 'deny',
        resource: null,
        context: { mcp: { level: 'debug' } },
      });
    });

    it('a request answered with an error rejects its decision', async () => {
      const agentId = agent(`${kind}-error`);
      const { client } = await open(agentId);
      // Allowed by pol_gw_read (test://static-*), unknown to the server: its error answer rejects the decision.
      expect((await rpcError(client.readResource({ uri: 'test://static-missing' }))).code).toBe(-32002);
      const [d] = await until(
        () => decisionsOf(agentId),
        (ds) => ds.length === 1 && ds[0]!.status !== 'pending',
        'the decision settled',
      );
      expect(d).toMatchObject({ effect: 'allow', status: 'rejected', resource: 'test://static-missing' });
    });

    it('server-initiated sampling, elicitation and roots reach the client; notifications pass both ways', async () => {
      const agentId = agent(`${kind}-notes`);
      const { client, recorded } = await open(agentId);
      const expected = kind === 'stdio' ? 'stdio' : 'http';
      expect(textOf(await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } }))).toBe(
        `LLM response: sampled by ${expected}`,
      );
      expect(textOf(await client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } }))).toContain(
        `"username":"${expected}"`,
      );
      expect(textOf(await client.callTool({ name: 'test_roots', arguments: {} }))).toContain(
        `file:///home/${expected}`,
      );

      const logs: string[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(String(n.params.data)));
      await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
      // The SDK's client runs notification handlers a microtask after it read them (the answer may come first).
      await until(
        () => logs,
        (l) => l.length === 3,
        'three log messages',
      );
      expect(logs).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);

      // Every progress notification, with the client's own token (its per-request handler would drop one
      // read together with the answer, so all are collected here).
      const progress: Array<{ token: unknown; progress: number }> = [];
      client.setNotificationHandler(
        ProgressNotificationSchema,
        (n) => void progress.push({ token: n.params.progressToken, progress: n.params.progress }),
      );
      await client.callTool({ name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'p-1' } });
      await until(
        () => progress,
        (p) => p.length === 3,
        'three progress notifications',
      );
      expect(progress).toEqual([0, 50, 100].map((n) => ({ token: 'p-1', progress: n })));

      const updated: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
      await client.subscribeResource({ uri: 'test://watched-resource' });
      await until(
        () => updated,
        (u) => u.length > 0,
        'notifications/resources/updated',
      );
      expect(updated).toEqual(['test://watched-resource']);

      // Client to server: the roots changed.
      await client.sendRootsListChanged();
      await until(
        recorded,
        (r) => r.some((x) => x.method === 'notifications/roots/list_changed'),
        'notifications/roots/list_changed at the server',
      );
      expect(recorded().filter((r) => r.method === 'notifications/initialized')).toHaveLength(1);
    });

    it('an unknown request method is refused and never forwarded; under pass_through: it is forwarded undecided', async () => {
      const agentId = agent(`${kind}-unknown`);
      const { client, recorded } = await open(agentId, { extra: 'pass_through: [custom/echo]\n' });
      const refused = await rpcError(client.request({ method: 'tasks/list', params: {} }, ListRootsResultLike));
      expect(refused.code).toBe(-32001);
      expect(refused.data).toEqual({ reason: 'mcp_proxy.unknown_method' });
      // Forwarded: the server itself answers that it has no such method.
      expect(
        (await rpcError(client.request({ method: 'custom/echo', params: { x: 1 } }, ListRootsResultLike))).code,
      ).toBe(-32601);
      expect(recorded().map((r) => r.method)).toContain('custom/echo');
      expect(recorded().map((r) => r.method)).not.toContain('tasks/list');
      expect(await decisionsOf(agentId)).toEqual([]);
    });

    it('_meta keys of the proxy never come from the client, in any case', async () => {
      const { client, recorded } = await open(agent(`${kind}-meta`));
      await client.callTool({
        name: 'test_simple_text',
        arguments: {},
        _meta: {
          'Agent-Authz/permit': 'forged',
          'AGENT-AUTHZ/DECISION': 'dec_forged',
          'agent-authz/permit': 'forged too',
          'other/key': 1,
        },
      });
      await client.readResource({ uri: 'test://static-text', _meta: { 'Agent-AUTHZ/Permit': 'forged' } } as {
        uri: string;
      });
      const reached = recorded().filter((x) => x.method === 'tools/call' || x.method === 'resources/read');
      expect(reached.map((x) => x.method).sort()).toEqual(['resources/read', 'tools/call']);
      for (const r of reached) {
        const keys = Object.keys(r.params!._meta).filter((k) => k.toLowerCase().startsWith('agent-authz/'));
        expect(keys.sort()).toEqual(['agent-authz/decision', 'agent-authz/permit']);
        expect(r.params!._meta['agent-authz/permit']).toMatch(/^eyJ/);
        expect(r.params!._meta['agent-authz/decision']).toMatch(/^dec_/);
      }
      expect(recorded().find((x) => x.method === 'tools/call')!.params!._meta['other/key']).toBe(1);
    });

    it('the upstream adds a colliding tool: after its list_changed, calls to either are refused without a decision, listed again or not', async () => {
      const agentId = agent(`${kind}-collide`);
      const { client, recorded } = await open(agentId);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('add_note');
      let changed = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
      expect(textOf(await client.callTool({ name: 'add_note_variant', arguments: {} }))).toBe('Add-Note added');
      await until(
        () => changed,
        (n) => n > 0,
        'notifications/tools/list_changed at the client',
      );
      const before = (await decisionsOf(agentId)).length;
      // Without listing again: the proxy read the tools before passing the notification on.
      for (const name of ['Add-Note', 'add_note']) {
        const refused = await client.callTool({ name, arguments: { text: 'x' } });
        expect(refused.isError, name).toBe(true);
        expect(refused._meta).toMatchObject({ 'agent-authz/error': 'mcp_proxy.tool_collision' });
      }
      expect((await decisionsOf(agentId)).length).toBe(before);
      expect(
        recorded()
          .filter((r) => r.method === 'tools/call')
          .map((r) => r.params!.name),
      ).toEqual(['add_note_variant']);
      // The proxy's own listing used its own ids; the client's listing hides both now.
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('add_note');
    });

    it('the service unreachable: decided requests answer -32603 (tool calls an isError result), nothing is forwarded', async () => {
      const { client, recorded } = await open(agent(`${kind}-down`), { url: `http://127.0.0.1:${await freePort()}` });
      const error = await rpcError(client.readResource({ uri: 'test://static-text' }));
      expect(error.code).toBe(-32603);
      expect(error.message).toContain('client.network_error');
      expect((await rpcError(client.listPrompts())).code).toBe(-32603);
      const call = await client.callTool({ name: 'test_simple_text', arguments: {} });
      expect(call.isError).toBe(true);
      expect(
        recorded()
          .map((r) => r.method)
          .filter((m) => !m.startsWith('notifications/') && m !== 'initialize'),
      ).toEqual([]);
    });
  });

  it('lists are emptied when their action can never be allowed; methods: maps a method to an action and resource', async () => {
    const bare = await overStdio('bare-agent-1');
    expect((await bare.client.listPrompts()).prompts).toEqual([]);
    expect((await bare.client.listResources()).resources).toEqual([]);
    expect((await bare.client.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect((await bare.client.listTools()).tools).toEqual([]);
    expect(bare.recorded().map((r) => r.method)).not.toContain('prompts/list');

    const shown = await overStdio(agent('lists'));
    expect((await shown.client.listPrompts()).prompts.map((p) => p.name)).toContain('test_prompt_with_arguments');
    expect((await shown.client.listResources()).resources.map((r) => r.uri)).toContain('test://static-text');

    const mappedAgent = agent('mapped');
    const mapped = await overStdio(mappedAgent.replace(/^gw-/, 'gw-mapped-'), {
      extra: 'methods:\n  resources/read: { action: library.read, resource: "doc:{uri}" }\n',
    });
    expect((await mapped.client.readResource({ uri: 'test://static-text' })).contents).toHaveLength(1);
    expect((await rpcError(mapped.client.readResource({ uri: 'test://static-binary' }))).data).toMatchObject({
      reason: 'resource.not_allowed',
    });
    const decisions = await decisionsOf(mappedAgent.replace(/^gw-/, 'gw-mapped-'));
    expect(decisions.map((d) => `${d.action} ${d.resource}`).sort()).toEqual([
      'library.read doc:test://static-binary',
      'library.read doc:test://static-text',
    ]);
  });

  describe('over Streamable HTTP: sessions', () => {
    it('two clients: each gets the sampling and elicitation requests its own calls caused', async () => {
      const http = await overHttp(agent('two'));
      const alice = await http.connect('alice');
      const bob = await http.connect('bob');
      const [a, b, ea, eb] = await Promise.all([
        alice.callTool({ name: 'test_sampling', arguments: { prompt: 'a' } }),
        bob.callTool({ name: 'test_sampling', arguments: { prompt: 'b' } }),
        alice.callTool({ name: 'test_elicitation', arguments: { message: 'a' } }),
        bob.callTool({ name: 'test_elicitation', arguments: { message: 'b' } }),
      ]);
      expect([textOf(a), textOf(b)]).toEqual(['LLM response: sampled by alice', 'LLM response: sampled by bob']);
      expect(textOf(ea)).toContain('"username":"alice"');
      expect(textOf(eb)).toContain('"username":"bob"');
      // Each client session had an upstream session of its own.
      const sessions = new Set(
        http
          .recorded()
          .filter((r) => r.method === 'tools/call')
          .map((r) => r.session),
      );
      expect(sessions.size).toBe(2);
    });

    it('sessions are capped (503 with a JSON-RPC error) and end after --session-idle-seconds without a request, unless a stream is open', async () => {
      const http = await overHttp(agent('cap'), { flags: ['--max-sessions', '3', '--session-idle-seconds', '1'] });
      // The SDK client keeps its GET stream open: its session is never idle.
      const initialize = async () => {
        const r = await fetch(http.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
          }),
        });
        return { status: r.status, session: r.headers.get('mcp-session-id'), body: await r.text() };
      };
      const first = await initialize();
      const second = await initialize();
      expect([first.status, second.status]).toEqual([200, 200]);
      const refused = await initialize();
      expect(refused.status).toBe(503);
      expect((JSON.parse(refused.body) as { error: { code: number; message: string } }).error).toMatchObject({
        code: -32000,
        message: expect.stringContaining('at most 3'),
      });
      // Once idle for a second the two raw sessions end: a new one is accepted, the old ones are gone.
      const accepted = await until(
        initialize,
        (r) => r.status === 200,
        'an initialize accepted after the idle sessions ended',
      );
      expect(accepted.session).not.toBe(first.session);
      const old = await fetch(http.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': first.session!,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
      });
      expect(old.status).toBe(404);
      expect(textOf(await http.client.callTool({ name: 'test_simple_text', arguments: {} }))).toBe(
        'This is a simple text response for testing.',
      );
    });

    it('a stdio upstream under --listen runs one process per session, ended with the session', async () => {
      const files = scratch(agent('children'));
      const proxy = await startChild(
        process.execPath,
        [
          BIN,
          'mcp-proxy',
          '--config',
          files.config,
          '--listen',
          '127.0.0.1:0',
          '--url',
          base,
          '--key',
          rt.testKey,
          '--',
          process.execPath,
          SERVER,
        ],
        { env: childEnv({ RECORD_FILE: files.record }), ready: (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1] },
      );
      stops.push(() => stopChild(proxy.child));
      const transports = [
        new StreamableHTTPClientTransport(new URL(proxy.value)),
        new StreamableHTTPClientTransport(new URL(proxy.value)),
      ];
      const clients = [clientAs('one'), clientAs('two')];
      for (const [i, client] of clients.entries()) {
        await client.connect(transports[i]!);
        stops.push(() => client.close());
        await client.callTool({ name: 'test_simple_text', arguments: {} });
      }
      const pids = [
        ...new Set(
          files
            .recorded()
            .filter((r) => r.method === 'tools/call')
            .map((r) => Number(r.session.replace('stdio-', ''))),
        ),
      ];
      expect(pids).toHaveLength(2);
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      expect(pids.map(alive)).toEqual([true, true]);
      // The first client ends its session (DELETE): its server process ends, the other one's runs on.
      await transports[0]!.terminateSession();
      await until(
        () => alive(pids[0]!),
        (a) => !a,
        "the first session's server process ended",
      );
      expect(alive(pids[1]!)).toBe(true);
      expect(textOf(await clients[1]!.callTool({ name: 'test_simple_text', arguments: {} }))).toBe(
        'This is a simple text response for testing.',
      );
    });

    it('refuses to listen on a non-loopback address without auth:, and answers 403 to a foreign Host', async () => {
      const files = scratch('bot');
      const refused = await new Promise<{ code: number | null; err: string }>((resolve) => {
        import('node:child_process').then(({ execFile }) =>
          execFile(
            process.execPath,
            [BIN, 'mcp-proxy', '--config', files.config, '--listen', '0.0.0.0:0', '--', process.execPath, SERVER],
            { env: childEnv({ AUTHZ_API_KEY: rt.testKey }) },
            (e, _o, err) => resolve({ code: e ? ((e as { code?: number }).code ?? null) : 0, err }),
          ),
        );
      });
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('loopback addresses only');

      const http = await overHttp(agent('host'), { flags: ['--public-url', 'https://tools.example.com/mcp'] });
      const post = (host: string, origin?: string) =>
        new Promise<number>((resolve, reject) => {
          const url = new URL(http.url);
          import('node:http').then(({ request }) => {
            const req = request(
              {
                host: url.hostname,
                port: url.port,
                path: url.pathname,
                method: 'POST',
                headers: { host, 'content-type': 'application/json', ...(origin ? { origin } : {}) },
              },
              (res) => {
                res.resume();
                resolve(res.statusCode ?? 0);
              },
            );
            req.on('error', reject);
            req.end('{"jsonrpc":"2.0","id":1,"method":"ping"}');
          }, reject);
        });
      expect(await post('evil.example.com')).toBe(403);
      expect(await post(`127.0.0.1:${new URL(http.url).port}`, 'http://evil.example.com')).toBe(403);
      // The public URL's host is accepted (no session: 400, not 403).
      expect(await post('tools.example.com', 'https://tools.example.com')).toBe(400);
    });
  });
});

/** Any result: for raw requests whose answer the tests do not read. */
const ListRootsResultLike = { parse: (v: unknown) => v } as unknown as Parameters<Client['request']>[1];
