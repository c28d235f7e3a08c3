/**
 * One session per agent run, wherever its tools are (docs/mcp.md#one-session-per-agent-run):
 * two real stdio proxies (`node bin/authz.js mcp-proxy`, each before its own MCP
 * server, the SDK's client in front) started with one session id (`--session`
 * for one, AUTHZ_SESSION_ID for the other) decide in one session on a real
 * service (both stores): a label that a call through one adds decides the next
 * call through the other. Without an id each process is its own session; with
 * `--listen`, `--session` is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { START, startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { ensureProxyBuilt, runProxyToExit, scratch, startStdioProxy, textOf, TOOLS_SERVER } from './helpers/proxy.js';
import { agent } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** The "files" server: write_file is files.write, and reading (writing, here) private files labels the session. */
const filesConfig = (agentId: string) => `agent_id: ${agentId}
server: files
tools:
  write_file: { action: files.write, resource: "file:{path}" }
`;
/** The "payments" server of the same agent: charge is payments.charge. */
const paymentsConfig = (agentId: string) => `agent_id: ${agentId}
server: payments
tools:
  charge: { action: payments.charge, resource: "customer:{customer_id}", amount: amount }
`;

describe.each(STORE_KINDS)('one session across two stdio proxies (%s store)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  const open: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_write', effect: 'allow', actions: ['files.write'], labels: ['private'] },
      { id: 'pol_charge', effect: 'allow', actions: ['payments.charge'] },
      {
        id: 'pol_no_charge_after_private',
        priority: 10,
        effect: 'deny',
        actions: ['payments.charge'],
        condition: "contains(session.labels, 'private')",
      },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    // A first build of the proxy may take minutes on a busy machine.
  }, 300_000);
  afterAll(async () => {
    for (const o of open) await o.close().catch(() => undefined);
    await rt?.close();
  });

  async function proxy(config: string, args: string[], env: Record<string, string> = {}) {
    const files = scratch(config);
    const p = await startStdioProxy(['--config', files.config, ...args], {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
      RECORD_FILE: files.record,
      TOOLS_DIR: files.tools,
      PERMIT_JWKS_URL: `${base}/.well-known/jwks.json`,
      PERMIT_ISSUER: rt.services.config.baseUrl,
      PERMIT_ACCOUNT: rt.accountId,
      PERMIT_NOW_MS: String(START + 1000),
      ...env,
    });
    open.push(p);
    return p;
  }
  const decisionsOf = async (agentId: string) =>
    (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}&limit=100`)).data as Array<JsonObject>;
  const charge = { name: 'charge', arguments: { customer_id: 'c1', amount: 5 } };

  it('a label added through one proxy decides the next call through the other', async () => {
    const agentId = agent('run');
    const session = `run-${agentId}`;
    const files = await proxy(filesConfig(agentId), ['--session', session]);
    const payments = await proxy(paymentsConfig(agentId), [], { AUTHZ_SESSION_ID: session });
    const before = await payments.client.callTool(charge);
    expect(before.isError, textOf(before)).toBeFalsy();
    const wrote = await files.client.callTool({
      name: 'write_file',
      arguments: { path: 'hr/salaries.csv', content: 'x' },
    });
    expect(wrote.isError, textOf(wrote)).toBeFalsy();
    const after = await payments.client.callTool(charge);
    expect(after.isError).toBe(true);
    const decisions = await decisionsOf(agentId);
    expect(decisions.map((d) => d.session_id)).toEqual([session, session, session]);
    const newest = decisions[0]!;
    expect(newest).toMatchObject({
      action: 'payments.charge',
      effect: 'deny',
      policy_id: 'pol_no_charge_after_private',
      metadata: { session_labels: ['private'] },
    });
    const read = await rt.getOk(`/v1/sessions/${session}`);
    expect(read).toMatchObject({ id: session, decisions: 3 });
    expect(read.labels).toEqual([
      { label: 'private', added_at: expect.any(String), source: 'policy', decision_id: decisions[1]!.id },
    ]);
  });

  it('without a session id each proxy process is its own session', async () => {
    const agentId = agent('apart');
    const files = await proxy(filesConfig(agentId), []);
    const payments = await proxy(paymentsConfig(agentId), []);
    expect(
      (await files.client.callTool({ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } })).isError,
    ).toBeFalsy();
    const charged = await payments.client.callTool(charge);
    expect(charged.isError, textOf(charged)).toBeFalsy();
    const [chargeDecision, writeDecision] = await decisionsOf(agentId);
    expect(chargeDecision!.session_id).toMatch(/^mcp-/);
    expect(writeDecision!.session_id).toMatch(/^mcp-/);
    expect(chargeDecision!.session_id).not.toBe(writeDecision!.session_id);
  });

  it('--session is refused with --listen (exit 2): there each MCP session is its own', async () => {
    const files = scratch(filesConfig(agent('listen')));
    const r = await runProxyToExit(
      ['--config', files.config, '--listen', '127.0.0.1:0', '--session', 'run-1', '--', process.execPath, TOOLS_SERVER],
      {
        AUTHZ_URL: base,
        AUTHZ_API_KEY: rt.testKey,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--session goes without --listen');
  });
});
