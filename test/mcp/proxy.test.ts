/**
 * `authz mcp-proxy` end to end, no mocks: a real service on loopback (both
 * stores), the real proxy (`node bin/authz.js mcp-proxy`), a real MCP server
 * behind it (fixtures/tools-server.mjs, the SDK's McpServer, which records what
 * it receives and verifies the permit it is given) and the SDK's own MCP client
 * in front, over stdio and over Streamable HTTP on both sides.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { argsDigest, createPermitVerifier, PermitMismatchError } from '../../permit-verifier/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { START, startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import {
  BIN,
  ensureProxyBuilt,
  httpClient,
  recorded,
  scratch,
  startPrinting,
  startStdioProxy,
  stop,
  textOf,
  TOOLS_SERVER,
} from './helpers/proxy.js';
import { agent } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** The proxy configuration of these tests: two mapped tools; fail and delete_file get tools.fail and tools.delete_file. */
const configFor = (agentId: string) => `agent_id: ${agentId}
server: tools
on_behalf_of: user-42
tools:
  write_file: { action: files.write, resource: "file:{path}" }
  charge: { action: payments.charge, resource: "customer:{customer_id}", amount: amount }
`;

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.each(STORE_KINDS)('authz mcp-proxy (%s store)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  const open: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_write', effect: 'allow', actions: ['files.write'], resources: ['file:notes/*'] },
      {
        id: 'pol_write_limited',
        effect: 'allow',
        agents: ['limited-*'],
        actions: ['files.write'],
        rate_limit: { per_minute: 1 },
      },
      {
        id: 'pol_charge',
        effect: 'allow',
        actions: ['payments.charge'],
        resources: ['customer:*'],
        budget: { unit: 'USD', limit: 100, period: 'monthly', threshold_alert: 0.8 },
      },
      { id: 'pol_fail', effect: 'allow', actions: ['tools.fail'] },
      // Writes by approve-* agents wait for a human first.
      {
        id: 'pol_write_approval',
        priority: 10,
        effect: 'review',
        agents: ['approve-*'],
        actions: ['files.write'],
        approval: { required: true, timeout_seconds: 900 },
      },
      // History (docs/history.md): capped-* agents get two writes per hour per session.
      {
        id: 'pol_write_capped',
        priority: 20,
        effect: 'deny',
        agents: ['capped-*'],
        actions: ['files.write'],
        condition: "history.count('files.write', '1h') >= 2",
      },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const o of open) await o.close().catch(() => undefined);
    await rt?.close();
  });

  /** A proxy over stdio for a new agent, with its own record file. */
  async function proxyFor(tag: string, args: string[] = [], env: Record<string, string> = {}) {
    const agentId = agent(tag);
    const files = scratch(configFor(agentId));
    const proxy = await startStdioProxy(['--config', files.config, ...args], {
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
    open.push(proxy);
    return { agentId, proxy, files, calls: () => recorded(files.record) };
  }

  const decisionsOf = async (agentId: string) =>
    (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>;
  const decision = (id: string) => rt.getOk(`/v1/decisions/${id}`);
  /** The decision once the proxy has confirmed or rejected it (that goes out after the answer reached the client): a bounded poll. */
  const settled = async (id: string) => {
    for (let i = 0; i < 400; i++) {
      const d = await decision(id);
      if (d.status !== 'pending') return d;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`decision ${id} was never confirmed or rejected`);
  };
  const chargeBudget = async (agentId: string) =>
    ((await rt.getOk(`/v1/budgets?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>).find(
      (b) => b.policy_id === 'pol_charge',
    );

  describe('over stdio', () => {
    let p: Awaited<ReturnType<typeof proxyFor>>;
    beforeAll(async () => {
      p = await proxyFor('stdio', ['--session', 'run-42']);
    });

    it('lists only the tools this agent could ever be allowed, and decides nothing for it', async () => {
      const { tools } = await p.proxy.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['charge', 'fail', 'write_file']);
      expect(tools.find((t) => t.name === 'write_file')?.inputSchema).toMatchObject({
        type: 'object',
        properties: { path: { type: 'string' } },
      });
      expect(await decisionsOf(p.agentId)).toEqual([]);
    });

    it('forwards an allowed call with the decision and permit in _meta, returns the result as it is and confirms the decision', async () => {
      const args = { path: 'notes/a.txt', content: 'hello' };
      const result = await p.proxy.client.callTool({ name: 'write_file', arguments: args });
      expect(result.isError).toBeFalsy();
      expect(textOf(result)).toBe('wrote 5 bytes to notes/a.txt');

      const [call] = p.calls();
      expect(call).toMatchObject({ tool: 'write_file', arguments: args });
      const id = call!.meta!['agent-authz/decision'] as string;
      expect(id).toMatch(/^dec_/);
      expect(call!.meta!['agent-authz/permit']).toMatch(/^eyJ/);
      // The tool server verified the permit with createPermitVerifier and the call's arguments.
      expect(call!.permit).toMatchObject({
        valid: true,
        claims: {
          sub: p.agentId,
          act: 'files.write',
          res: 'file:notes/a.txt',
          dec: id,
          sid: 'run-42',
          obo: 'user-42',
          args: argsDigest(args),
        },
      });

      const d = await settled(id);
      expect(d).toMatchObject({
        effect: 'allow',
        status: 'confirmed',
        action: 'files.write',
        resource: 'file:notes/a.txt',
        session_id: 'run-42',
        on_behalf_of: 'user-42',
        args_digest: argsDigest(args),
        context: { mcp: { server: 'tools', tool: 'write_file', arguments: args } },
      });
    });

    it('a permit is refused by the verifier for other arguments than those it was decided for', async () => {
      const args = { path: 'notes/b.txt', content: 'one' };
      await p.proxy.client.callTool({ name: 'write_file', arguments: args });
      const call = p.calls().find((c) => c.arguments.path === 'notes/b.txt')!;
      const token = call.meta!['agent-authz/permit'] as string;
      const verifier = createPermitVerifier({
        jwksUrl: `${base}/.well-known/jwks.json`,
        issuer: rt.services.config.baseUrl,
        account: rt.accountId,
        environment: 'test',
        now: () => START + 1000,
      });
      await expect(verifier.verify(token, { action: 'files.write', arguments: args })).resolves.toMatchObject({
        args: argsDigest(args),
      });
      const other = verifier.verify(token, {
        action: 'files.write',
        arguments: { ...args, path: 'notes/../../etc/passwd' },
      });
      await expect(other).rejects.toBeInstanceOf(PermitMismatchError);
      await expect(other).rejects.toMatchObject({ code: 'permit.mismatch' });
    });

    it('a denied call never reaches the upstream: a tool error naming the reason and the decision', async () => {
      const before = p.calls().length;
      const result = await p.proxy.client.callTool({
        name: 'write_file',
        arguments: { path: '/etc/passwd', content: 'x' },
      });
      expect(result.isError).toBe(true);
      const d = (await decisionsOf(p.agentId)).find((x) => x.resource === 'file:/etc/passwd')!;
      expect(d).toMatchObject({ effect: 'deny', reason: 'resource.not_allowed', status: 'denied' });
      expect(textOf(result)).toBe(
        `Denied by agent-authz: resource.not_allowed (decision ${d.id}). The tool was not called.`,
      );
      expect(result._meta).toMatchObject({
        'agent-authz/decision': d.id,
        'agent-authz/reason': 'resource.not_allowed',
      });
      expect(p.calls().length).toBe(before);
    });

    it('a hidden tool is still decided (the decision is the record), and refused', async () => {
      const before = p.calls().length;
      const result = await p.proxy.client.callTool({ name: 'delete_file', arguments: { path: 'notes/a.txt' } });
      expect(result.isError).toBe(true);
      const d = (await decisionsOf(p.agentId)).find((x) => x.action === 'tools.delete_file')!;
      expect(d).toMatchObject({
        effect: 'deny',
        reason: 'policy.not_found',
        context: { mcp: { tool: 'delete_file' } },
      });
      expect(textOf(result)).toContain(`policy.not_found (decision ${d.id})`);
      expect(p.calls().length).toBe(before);
    });

    it('a result with isError: true is returned as it is and rejects the decision', async () => {
      const result = await p.proxy.client.callTool({ name: 'fail', arguments: {} });
      expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'the tool failed' }] });
      const call = p.calls().find((c) => c.tool === 'fail')!;
      expect(await settled(call.meta!['agent-authz/decision'] as string)).toMatchObject({
        action: 'tools.fail',
        status: 'rejected',
      });
    });

    it('absent arguments are digested as {}, an explicit null as null (docs/permits.md#permits-bound-to-arguments, as the verifier does)', async () => {
      // The digests of the tools.fail decisions made since `seen` (by decision id: earlier tests digested {} too).
      const failDecisions = async () => (await decisionsOf(p.agentId)).filter((d) => d.action === 'tools.fail');
      const seen = new Set((await failDecisions()).map((d) => d.id as string));
      const newDigests = async () =>
        (await failDecisions()).filter((d) => !seen.has(d.id as string)).map((d) => d.args_digest as string);
      await p.proxy.client.callTool({ name: 'fail' });
      expect(await newDigests()).toEqual([argsDigest({})]);
      // The SDK client sends what it is given; null is not in its types.
      await p.proxy.client
        .callTool({ name: 'fail', arguments: null as unknown as Record<string, unknown> })
        .catch(() => undefined);
      expect((await newDigests()).sort()).toEqual([argsDigest({}), argsDigest(null)].sort());
      expect(argsDigest(null)).not.toBe(argsDigest({}));
    });

    it('a call whose arguments lack what the mapping needs is refused, not forwarded', async () => {
      const before = p.calls().length;
      const result = await p.proxy.client.callTool({
        name: 'charge',
        arguments: { customer_id: 'cus_1', amount: 'ten' },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('the argument "amount" carries the amount');
      expect(p.calls().length).toBe(before);
    });
  });

  it('a USD budget is held and consumed from the arguments; past it, calls are denied and not forwarded', async () => {
    const p = await proxyFor('budget');
    const first = await p.proxy.client.callTool({ name: 'charge', arguments: { customer_id: 'cus_1', amount: 60 } });
    expect(textOf(first)).toBe('charged 60 USD to cus_1');
    const [listed] = await decisionsOf(p.agentId);
    const d = await settled(listed!.id as string);
    expect(await chargeBudget(p.agentId)).toMatchObject({ unit: 'USD', consumed: 60, held: 0 });
    expect(d).toMatchObject({ amount: 60, resource: 'customer:cus_1', status: 'confirmed', confirmed_amount: 60 });
    // A fresh session id per process when none is given.
    expect(d!.session_id).toMatch(/^mcp-[0-9a-f-]{36}$/);

    const second = await p.proxy.client.callTool({ name: 'charge', arguments: { customer_id: 'cus_2', amount: 50 } });
    expect(second.isError).toBe(true);
    expect(textOf(second)).toMatch(/^Denied by agent-authz: budget\.exceeded \(decision dec_\w+\)/);
    expect(p.calls().map((c) => c.arguments.amount)).toEqual([60]);
    expect(await chargeBudget(p.agentId)).toMatchObject({ consumed: 60, held: 0 });
  });

  it('a rate-limited call (429) is a tool error with the Retry-After seconds, not forwarded', async () => {
    const p = await proxyFor('limited');
    expect(
      (await p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/1', content: 'a' } })).isError,
    ).toBeFalsy();
    const refused = await p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/2', content: 'b' } });
    expect(refused.isError).toBe(true);
    const seconds = Number(
      /^Refused by agent-authz: rate_limit\.exceeded, retry after (\d+) seconds\. The tool was not called\.$/.exec(
        textOf(refused),
      )?.[1],
    );
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(refused._meta).toMatchObject({
      'agent-authz/error': 'rate_limit.exceeded',
      'agent-authz/retry_after': seconds,
    });
    expect(p.calls().map((c) => c.arguments.path)).toEqual(['notes/1']);
  });

  it("history: the gateway's decisions carry its session_id and are counted; two stdio proxies of one run share the session's history", async () => {
    const first = await proxyFor('capped', [], { AUTHZ_SESSION_ID: `run-${agent('shared')}` });
    expect(
      (await first.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/1', content: 'a' } })).isError,
    ).toBeFalsy();
    const [made] = await decisionsOf(first.agentId);
    expect(made).toMatchObject({
      action: 'files.write',
      effect: 'allow',
      metadata: { history: [{ fn: 'count', scope: 'session', value: 0 }] },
    });
    expect(made!.session_id).toMatch(/^run-shared-/);
    // A second proxy of the same run (same AUTHZ_SESSION_ID), another agent: the session's second write, then none.
    const second = await proxyFor('capped', [], { AUTHZ_SESSION_ID: made!.session_id as string });
    expect(
      (await second.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/2', content: 'b' } }))
        .isError,
    ).toBeFalsy();
    const refused = await second.proxy.client.callTool({
      name: 'write_file',
      arguments: { path: 'notes/3', content: 'c' },
    });
    expect(refused.isError).toBe(true);
    expect((await decisionsOf(second.agentId))[0]).toMatchObject({
      effect: 'deny',
      policy_id: 'pol_write_capped',
      metadata: { history: [{ value: 2 }] },
    });
    expect(second.calls().map((c) => c.arguments.path)).toEqual(['notes/2']);
    // Another run starts afresh.
    const other = await proxyFor('capped', [], { AUTHZ_SESSION_ID: `run-${agent('other')}` });
    expect(
      (await other.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/4', content: 'd' } })).isError,
    ).toBeFalsy();
  });

  it('a revoked agent sees no tools and every call is denied agent.revoked', async () => {
    const p = await proxyFor('revoked', [], { AUTHZ_SESSION_ID: 'env-session' });
    expect((await p.proxy.client.listTools()).tools.length).toBe(3);
    expect(
      (await p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/before', content: 'x' } }))
        .isError,
    ).toBeFalsy();
    const r = await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${p.agentId}/revoke` });
    expect(r.statusCode, r.body).toBe(200);
    expect((await p.proxy.client.listTools()).tools).toEqual([]);
    const result = await p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/x', content: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('agent.revoked');
    expect(p.calls().map((c) => c.arguments.path)).toEqual(['notes/before']);
    expect((await decisionsOf(p.agentId))[0]).toMatchObject({ reason: 'agent.revoked', session_id: 'env-session' });
  });

  it('a call awaiting a human approval waits: approved, it is forwarded; denied, it is a tool error and never forwarded', async () => {
    const reviewer = await rt.keyWith(['reviews:read', 'reviews:write']);
    const p = await proxyFor('approve');
    /** Answers the agent's open review as soon as it is in the queue (a bounded poll); the decision's id. */
    const answerWhenOpen = async (verdict: 'approve' | 'deny'): Promise<string> => {
      for (let i = 0; i < 600; i++) {
        const open = (
          (await rt.getOk('/v1/reviews?status=open&limit=100')).data as Array<{ id: string; agent_id: string }>
        ).filter((d) => d.agent_id === p.agentId);
        if (open.length > 0) {
          const r = await rt.call(reviewer, {
            method: 'POST',
            url: `/v1/decisions/${open[0]!.id}/review`,
            payload: { verdict, reviewer: 'ada' },
          });
          expect(r.statusCode, r.body).toBe(200);
          return open[0]!.id;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('no open review appeared');
    };
    const [approved, approvedId] = await Promise.all([
      p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/approved', content: 'x' } }),
      answerWhenOpen('approve'),
    ]);
    expect(approved.isError, textOf(approved)).toBeFalsy();
    expect(p.calls().map((c) => c.arguments.path)).toEqual(['notes/approved']);
    expect(p.calls()[0]!.meta!['agent-authz/decision']).toBe(approvedId);
    expect(await settled(approvedId)).toMatchObject({
      effect: 'review',
      status: 'confirmed',
      review: { status: 'approved', reviewer: 'ada' },
    });

    const [denied, deniedId] = await Promise.all([
      p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/denied', content: 'x' } }),
      answerWhenOpen('deny'),
    ]);
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('review.denied');
    expect(p.calls().map((c) => c.arguments.path)).toEqual(['notes/approved']);
    expect(await decision(deniedId)).toMatchObject({ effect: 'deny', reason: 'review.denied', status: 'denied' });
  });

  it('the service unreachable: tools/list fails, a call is a tool error, nothing is forwarded', async () => {
    const p = await proxyFor('down', ['--url', `http://127.0.0.1:${await closedPort()}`]);
    await expect(p.proxy.client.listTools()).rejects.toThrow(/client\.network_error/);
    const result = await p.proxy.client.callTool({ name: 'write_file', arguments: { path: 'notes/a', content: 'a' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^agent-authz could not decide this call \(client\.network_error: /);
    expect(p.calls()).toEqual([]);
  });

  describe('over Streamable HTTP on both sides (--listen, --upstream-url)', () => {
    let upstream: ChildProcess;
    let proxy: ChildProcess;
    let proxyUrl: string;
    let agentId: string;
    let files: ReturnType<typeof scratch>;

    beforeAll(async () => {
      agentId = agent('http');
      files = scratch(configFor(agentId));
      const env = {
        RECORD_FILE: files.record,
        PERMIT_JWKS_URL: `${base}/.well-known/jwks.json`,
        PERMIT_ISSUER: rt.services.config.baseUrl,
        PERMIT_ACCOUNT: rt.accountId,
        PERMIT_NOW_MS: String(START + 1000),
      };
      const tools = await startPrinting(process.execPath, [TOOLS_SERVER, '--http'], env, (l) =>
        l.startsWith('{') ? (JSON.parse(l) as { url: string }).url : undefined,
      );
      upstream = tools.child;
      const started = await startPrinting(
        process.execPath,
        [
          BIN,
          'mcp-proxy',
          '--config',
          files.config,
          '--listen',
          '127.0.0.1:0',
          '--upstream-url',
          tools.value,
          '--url',
          base,
          '--key',
          rt.testKey,
        ],
        {},
        (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1],
      );
      proxy = started.child;
      proxyUrl = started.value;
    });
    afterAll(async () => {
      if (proxy) await stop(proxy);
      if (upstream) await stop(upstream);
    });

    it('filters tools/list, forwards an allowed call with _meta, refuses a denied one', async () => {
      expect(proxyUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const client = await httpClient(proxyUrl);
      try {
        expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['charge', 'fail', 'write_file']);
        const args = { path: 'notes/h.txt', content: 'via http' };
        expect(textOf(await client.callTool({ name: 'write_file', arguments: args }))).toBe(
          'wrote 8 bytes to notes/h.txt',
        );
        const denied = await client.callTool({
          name: 'write_file',
          arguments: { path: 'secrets/h.txt', content: 'no' },
        });
        expect(denied.isError).toBe(true);
        expect(textOf(denied)).toContain('resource.not_allowed');
        const calls = recorded(files.record);
        expect(calls.map((c) => c.arguments.path)).toEqual(['notes/h.txt']);
        expect(calls[0]!.permit).toMatchObject({ valid: true, claims: { sub: agentId, args: argsDigest(args) } });
        expect(await settled(calls[0]!.meta!['agent-authz/decision'] as string)).toMatchObject({ status: 'confirmed' });
      } finally {
        await client.close();
      }
    });

    it('refuses a request whose Host is not a loopback name (DNS rebinding)', async () => {
      const url = new URL(proxyUrl);
      const r = await new Promise<number>((resolve, reject) => {
        import('node:http').then(({ request }) => {
          const req = request(
            {
              host: url.hostname,
              port: url.port,
              path: url.pathname,
              method: 'POST',
              headers: { host: 'evil.example', 'content-type': 'application/json' },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end('{}');
        }, reject);
      });
      expect(r).toBe(403);
    });
  });
});
