/**
 * Declared mappings end to end, no mocks: a real service on loopback, the real
 * `node bin/authz.js mcp-proxy` with `declared_mappings: true`, and behind it
 * a real MCP server whose tools declare `x-authzen-mapping`
 * (fixtures/declaring-server.mjs, the SDK's low-level Server, recording the
 * calls that reach it); the SDK's own MCP client in front, over stdio; and as a
 * gateway (`--listen` with `auth:`, the stand-in issuer of examples/oauth-issuer
 * on 127.0.0.1), where `$token` in a mapping is the bearer token's verified claims.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ChildProcess } from 'node:child_process';
import { startStandInIssuer, type StandInIssuer } from '../../examples/oauth-issuer/server.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { BIN, childEnv, ensureProxyBuilt, scratch, startPrinting, stop, textOf } from './helpers/proxy.js';
import type { JsonObject } from '../helpers/json.js';
import { mainThreadCpuOf } from '../../bench/http/cpu.js';

const SERVER = join(import.meta.dirname, 'fixtures', 'declaring-server.mjs');
const AGENT = `declaring-${Math.random().toString(36).slice(2, 8)}`;

const CONFIG = `agent_id: ${AGENT}
server: crm
declared_mappings:
  extra_actions: [audit.record]
tools:
  get_invoice: { action: crm.read_invoice, resource: "inv:{id}" }
`;

describe('authz mcp-proxy with mappings declared by the server', () => {
  let rt: TestRuntime;
  let client: Client;
  let record: string;
  let stderr = '';

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    await rt.setPolicies([
      { id: 'pol_customer', effect: 'allow', actions: ['crm.get_customer'], resources: ['customer:allowed-*'] },
      { id: 'pol_small', effect: 'allow', actions: ['crm.small_transfer'], resources: ['account:*'] },
      { id: 'pol_export', effect: 'allow', actions: ['crm.export_contacts'] },
      { id: 'pol_region', effect: 'allow', actions: ['crm.regional_report'] },
      { id: 'pol_profile', effect: 'allow', actions: ['crm.read_profile'] },
      { id: 'pol_invoice', effect: 'allow', actions: ['crm.read_invoice'], resources: ['inv:*'] },
      { id: 'pol_ping', effect: 'allow', actions: ['crm.ping_crm', 'crm.reveal_archive'] },
      { id: 'pol_archive', effect: 'allow', actions: ['crm.read_archive'], resources: ['archive:*'] },
      { id: 'pol_audit', effect: 'allow', actions: ['audit.record'] },
      // Would allow the refused mappings' actions: a refusal is the mapping's, not the policies'.
      { id: 'pol_payments', effect: 'allow', actions: ['payments.charge', 'payments.pay'] },
      // Written for another server whose AuthZEN names became authzen.*: no action of crm's mappings may reach it.
      { id: 'pol_other_server', effect: 'allow', actions: ['authzen.small_transfer', 'authzen.get_customer'] },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    const files = scratch(CONFIG);
    record = files.record;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp-proxy', '--config', files.config, '--', process.execPath, SERVER],
      env: childEnv({ AUTHZ_URL: base, AUTHZ_API_KEY: rt.testKey, RECORD_FILE: files.record }),
      stderr: 'pipe',
    });
    transport.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    client = new Client({ name: 'declared-test-agent', version: '1.0.0' });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client?.close();
    await rt?.close();
  });

  const reached = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { tool: string; arguments: Record<string, unknown> });
  const decisions = async () =>
    ((await rt.getOk(`/v1/decisions?agent_id=${AGENT}&limit=100`)).data as Array<JsonObject>).reverse();
  const lastDecision = async () => (await decisions()).at(-1)!;
  const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args });

  it('lists a tool by its declared literal action, always shows one computed per call, and hides one whose mapping is refused', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'audit_event',
      'export_contacts',
      'get_customer',
      'get_invoice',
      'harmless_note',
      'my_profile',
      'pick_action',
      'ping_crm',
      'regional_report',
      'reveal_archive',
      'route_payment',
      'transfer',
    ]);
    // the mapping travels on to the client (COAZ-MCP: discoverability)
    expect(tools.find((t) => t.name === 'get_customer')?.inputSchema).toHaveProperty(
      ['x-authzen-mapping', 'evaluation', 'action', 'name'],
      'get_customer',
    );
    expect(stderr).toContain(
      'tool "charge_card": its declared mapping is refused (the action payments.charge is outside this server\'s namespace crm.* (list it under declared_mappings.extra_actions to accept it))',
    );
  });

  it('decides with the declared action and resource: one argument value allowed, another denied', async () => {
    const allowed = await call('get_customer', { id: 'allowed-1', case: 'c-9' });
    expect(allowed.isError).toBeFalsy();
    expect(textOf(allowed)).toBe('get_customer done');
    expect(await lastDecision()).toMatchObject({
      action: 'crm.get_customer',
      resource: 'customer:allowed-1',
      effect: 'allow',
    });

    const denied = await call('get_customer', { id: 'other-2' });
    expect(denied.isError).toBe(true);
    const d = await lastDecision();
    expect(d).toMatchObject({ action: 'crm.get_customer', resource: 'customer:other-2', effect: 'deny' });
    expect(textOf(denied)).toBe(`Denied by agent-authz: ${d.reason} (decision ${d.id}). The tool was not called.`);
    expect(
      reached()
        .filter((c) => c.tool === 'get_customer')
        .map((c) => c.arguments.id),
    ).toEqual(['allowed-1']);
  });

  it('computes the action with CEL over params.arguments', async () => {
    // The server of docs/mcp.md's example: its transfer tool declares the page's mapping, to the letter.
    const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'mcp.md'), 'utf8');
    const section = page.slice(
      page.indexOf('\n### Mappings declared by the server\n'),
      page.indexOf('\n### A protected upstream\n'),
    );
    const documented = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!) as {
      name: string;
      inputSchema: Record<string, unknown>;
    };
    const listed = (await client.listTools()).tools.find((t) => t.name === documented.name);
    expect(listed?.inputSchema['x-authzen-mapping']).toEqual(documented.inputSchema['x-authzen-mapping']);
    expect((await call('transfer', { from: 'acc-1', amount: 20 })).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({
      action: 'crm.small_transfer',
      resource: 'account:acc-1',
      effect: 'allow',
    });
    expect((await call('transfer', { from: 'acc-1', amount: 500 })).isError).toBe(true);
    expect(await lastDecision()).toMatchObject({ action: 'crm.large_transfer', effect: 'deny' });
    expect(
      reached()
        .filter((c) => c.tool === 'transfer')
        .map((c) => c.arguments.amount),
    ).toEqual([20]);
    // an action under the server's own namespace stays as it is
    expect((await call('export_contacts', { list: 'vip' })).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({ action: 'crm.export_contacts', resource: 'list:vip' });
  });

  it("keeps a server's declared names in its own namespace: a policy written for authzen.* of another server does not reach them", async () => {
    // The red team's reproduction: a harmless tool declares "small_transfer", which became authzen.small_transfer,
    // allowed by pol_other_server, and was forwarded with a permit for it.
    const note = await call('harmless_note', { id: 'n-1' });
    expect(note.isError).toBe(true);
    expect(await lastDecision()).toMatchObject({ action: 'crm.small_transfer', resource: 'note:n-1', effect: 'deny' });
    expect(reached().map((c) => c.tool)).not.toContain('harmless_note');
    // The agent picks the action through $params.arguments.act: authzen.* is refused, no decision, nothing forwarded.
    const before = (await decisions()).length;
    for (const act of ['authzen.small_transfer', 'authzen.get_customer', 'payments.pay']) {
      const picked = await call('pick_action', { act, acc: 'acc-1' });
      expect(picked).toMatchObject({ isError: true, _meta: { 'agent-authz/error': 'mcp_proxy.mapping_error' } });
      expect(textOf(picked)).toBe(
        `agent-authz refused this call: the action ${act} is outside this server's namespace crm.* (list it under declared_mappings.extra_actions to accept it). The tool was not called.`,
      );
    }
    expect((await decisions()).length).toBe(before);
    expect(reached().map((c) => c.tool)).not.toContain('pick_action');
    // A name outside the grammar lands in crm.: what crm's policies say of it decides.
    expect((await call('pick_action', { act: 'small_transfer', acc: 'acc-1' })).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({
      action: 'crm.small_transfer',
      resource: 'account:acc-1',
      effect: 'allow',
    });
    expect(reached().at(-1)).toEqual({ tool: 'pick_action', arguments: { act: 'small_transfer', acc: 'acc-1' } });
    // An action the configuration lists under declared_mappings.extra_actions is accepted.
    expect((await call('audit_event', { id: 'e-1' })).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({ action: 'audit.record', resource: 'event:e-1', effect: 'allow' });
  });

  it('refuses an action outside <server>. and the extra actions with mcp_proxy.mapping_error: no decision, nothing forwarded', async () => {
    const before = (await decisions()).length;
    const refused = await call('charge_card', { card: '4242' });
    expect(refused).toMatchObject({ isError: true, _meta: { 'agent-authz/error': 'mcp_proxy.mapping_error' } });
    expect(textOf(refused)).toBe(
      "agent-authz refused this call: the action payments.charge is outside this server's namespace crm.* (list it under declared_mappings.extra_actions to accept it). The tool was not called.",
    );
    // computed per call: refused when the call's value leaves the namespaces
    const routed = await call('route_payment', { rail: 'payments' });
    expect(routed).toMatchObject({ isError: true, _meta: { 'agent-authz/error': 'mcp_proxy.mapping_error' } });
    expect(textOf(routed)).toContain('the action payments.pay is outside');
    expect((await decisions()).length).toBe(before);
    expect(reached().map((c) => c.tool)).not.toContain('charge_card');
    expect(reached().map((c) => c.tool)).not.toContain('route_payment');
  });

  it('refuses a call whose mapping expression fails, with mcp_proxy.mapping_error and nothing forwarded', async () => {
    const before = (await decisions()).length;
    const failed = await call('regional_report', {});
    expect(failed).toMatchObject({ isError: true, _meta: { 'agent-authz/error': 'mcp_proxy.mapping_error' } });
    expect(textOf(failed)).toMatch(
      /^agent-authz refused this call: evaluation\.resource\.id: the expression "\$params\.arguments\.region" failed: .+\. The tool was not called\.$/,
    );
    expect((await decisions()).length).toBe(before);
    expect(reached().map((c) => c.tool)).not.toContain('regional_report');
    // with the argument the same tool is decided and forwarded
    expect((await call('regional_report', { region: 'eu' })).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({
      action: 'crm.regional_report',
      resource: 'region:eu',
      effect: 'allow',
    });
  });

  it('gives expressions an empty token without auth: (a claim read fails)', async () => {
    const profile = await call('my_profile');
    expect(profile).toMatchObject({ isError: true, _meta: { 'agent-authz/error': 'mcp_proxy.mapping_error' } });
    expect(textOf(profile)).toContain('evaluation.resource.id: the expression "$token.sub" failed');
  });

  it("lets the configuration's tools: entry win over the declared mapping, and leaves undeclared tools to the naming rule", async () => {
    expect((await call('get_invoice', { id: 'i-1' })).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({ action: 'crm.read_invoice', resource: 'inv:i-1', effect: 'allow' });
    expect((await call('ping_crm')).isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({ action: 'crm.ping_crm', effect: 'allow' });
    expect((await decisions()).map((d) => d.action)).not.toContain('crm.get_invoice');
  });

  it("takes the mapping of a tool that appears later from the proxy's own re-reading on tools/list_changed", async () => {
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    expect((await call('reveal_archive')).isError).toBeFalsy();
    // the proxy reads the tools again before it passes the notification on
    await changed;
    // called without listing the tools again: decided by its declared mapping (its resource), not by the naming rule (none)
    const archive = await call('read_archive', { year: '2020' });
    expect(archive.isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({
      action: 'crm.read_archive',
      resource: 'archive:2020',
      effect: 'allow',
    });
    expect(reached().at(-1)).toEqual({ tool: 'read_archive', arguments: { year: '2020' } });
  });
});

describe('declared mappings behind a gateway with auth: ($token is the verified token)', () => {
  let rt: TestRuntime;
  let as: StandInIssuer;
  let gateway: ChildProcess;
  let url: string;
  let record: string;
  const clients: Client[] = [];
  const agent = `profile-bot-${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    // Only alice's profile may be read: the resource is built from the token's sub.
    await rt.setPolicies([
      { id: 'pol_alice_profile', effect: 'allow', actions: ['crm.read_profile'], resources: ['profile:alice'] },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    as = await startStandInIssuer({ clients: [{ client_id: agent, client_secret: 'profile-secret', user: 'alice' }] });
    const files = scratch(`server: crm
declared_mappings: true
auth:
  issuer: ${as.issuer}
  scopes: [mcp:tools]
`);
    record = files.record;
    const started = await startPrinting(
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
      { RECORD_FILE: files.record },
      (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1],
    );
    gateway = started.child;
    url = started.value;
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    if (gateway) await stop(gateway);
    await as?.close();
    await rt?.close();
  });

  /** An SDK client over Streamable HTTP with a bearer token for this agent acting for `user`. */
  async function clientFor(user: string): Promise<Client> {
    const token = await as.mint({ claims: { aud: url, client_id: agent, sub: user, scope: 'mcp:tools' } });
    const client = new Client({ name: 'declared-gateway-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  }
  const lastDecision = async () =>
    ((await rt.getOk(`/v1/decisions?agent_id=${agent}&limit=1`)).data as Array<JsonObject>)[0]!;
  const reached = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { tool: string });

  it("builds the resource from the token's sub: alice's token is allowed, bob's is denied and not forwarded", async () => {
    const alice = await clientFor('alice');
    const allowed = await alice.callTool({ name: 'my_profile', arguments: {} });
    expect(allowed.isError).toBeFalsy();
    expect(await lastDecision()).toMatchObject({
      agent_id: agent,
      on_behalf_of: 'alice',
      action: 'crm.read_profile',
      resource: 'profile:alice',
      effect: 'allow',
    });

    const bob = await clientFor('bob');
    const denied = await bob.callTool({ name: 'my_profile', arguments: {} });
    expect(denied.isError).toBe(true);
    const d = await lastDecision();
    expect(d).toMatchObject({
      agent_id: agent,
      on_behalf_of: 'bob',
      action: 'crm.read_profile',
      resource: 'profile:bob',
      effect: 'deny',
    });
    expect(textOf(denied)).toBe(`Denied by agent-authz: ${d.reason} (decision ${d.id}). The tool was not called.`);
    expect(reached().filter((c) => c.tool === 'my_profile')).toHaveLength(1);
  });

  it("bounds a mapping's evaluation: a loop over the call's list is refused within 100 ms, and another session's pings are not held", async () => {
    const alice = await clientFor('alice');
    const other = await clientFor('carol');
    const p50 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]!;
    const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1]!;
    // Three nested .map over 200 items: 8 million steps, 11 s on one call before the budget.
    const l = Array.from({ length: 200 }, (_, i) => i);
    const heavy = { name: 'heavy_report', arguments: { l } };
    // The same traffic with a mapping that fails at once (a missing argument): what this machine's load costs anyway.
    const cheap = { name: 'regional_report', arguments: { l } };
    /** Calls `request` 20 times while the other session pings without pause: how long the calls and the pings took, and the gateway's event-loop CPU. */
    const measure = async (request: typeof heavy) => {
      const cpuBefore = mainThreadCpuOf(gateway.pid!);
      let calling = true;
      const pinging = (async () => {
        const took: number[] = [];
        while (calling) {
          const started = performance.now();
          await other.ping();
          took.push(performance.now() - started);
        }
        return took;
      })();
      const answered: number[] = [];
      for (let i = 0; i < 20; i++) {
        const started = performance.now();
        const refused = await alice.callTool(request);
        answered.push(performance.now() - started);
        expect(refused).toMatchObject({ isError: true, _meta: { 'agent-authz/error': 'mcp_proxy.mapping_error' } });
      }
      calling = false;
      const pings = await pinging;
      return { answered, pings, cpuPerCall: (mainThreadCpuOf(gateway.pid!) - cpuBefore) / answered.length };
    };
    const base = await measure(cheap);
    const loaded = await measure(heavy);
    const refused = await alice.callTool(heavy);
    expect(textOf(refused)).toMatch(
      /^agent-authz refused this call: evaluation\.resource\.id: the expression ".*" went past its budget \(more than \d+ (loop steps|ms|list items)\)\. The tool was not called\.$/,
    );
    console.log(
      `heavy_report refused in p50 ${p50(loaded.answered).toFixed(1)} ms (max ${Math.max(...loaded.answered).toFixed(1)}), a cheap refusal in p50 ${p50(base.answered).toFixed(1)} ms; ` +
        `another session's ping p99 ${p99(loaded.pings).toFixed(1)} ms during heavy calls (${loaded.pings.length} pings), ${p99(base.pings).toFixed(1)} ms during cheap ones (${base.pings.length}); ` +
        `the gateway's event loop used ${loaded.cpuPerCall.toFixed(1)} ms CPU per heavy call, ${base.cpuPerCall.toFixed(1)} ms per cheap one`,
    );
    // Figures of a shared machine: the budget's share is what the heavy calls add to the same traffic. The event loop's
    // CPU per call is what holds another session's ping (waiting for a core is not the gateway's doing): at most 20 ms.
    expect(p50(loaded.answered) - p50(base.answered)).toBeLessThan(100);
    expect(loaded.cpuPerCall - base.cpuPerCall).toBeLessThanOrEqual(20);
    expect(reached().map((c) => c.tool)).not.toContain('heavy_report');
  });
});
