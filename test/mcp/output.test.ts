/**
 * The gateway's output side (issue 48; docs/mcp.md#what-the-gateway-reads-in-results), end to end with no
 * mocks: a real service on loopback, the real `node bin/authz.js mcp-proxy`
 * with an `output:` configuration, a real MCP server behind it
 * (fixtures/output-server.mjs) and the SDK's own client in front, over stdio.
 * Each label source (configuration by tool glob, annotations, server-declared
 * labels, detectors) and each detector mode (label, redact, block) on tool
 * results, structuredContent, embedded resources' textual blobs,
 * resources/read and prompts/get; images counted as skipped; nothing recorded
 * for a result without labels or findings; and, when the record fails, the
 * result blocked (fail closed).
 */
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { ensureProxyBuilt, scratch, startStdioProxy } from './helpers/proxy.js';
import type { JsonObject } from '../helpers/json.js';

const SERVER = join(import.meta.dirname, 'fixtures', 'output-server.mjs');
const MAIL = 'From: Ada <ada.lovelace@example.org>\nCall me on +44 20 7946 0958 before Friday.';
const suffix = Math.random().toString(36).slice(2, 8);

type Result = {
  content: Array<Record<string, unknown>>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};

/** The proxy, with `output` as its configuration's output: section, connected to an SDK client. */
function connect(agent: string, output: string, base: string, key: string) {
  const files = scratch(`agent_id: ${agent}\nserver: mail\n${output}`);
  return startStdioProxy(['--config', files.config], { AUTHZ_URL: base, AUTHZ_API_KEY: key }, SERVER);
}

describe('authz mcp-proxy reads results (output:)', () => {
  let rt: TestRuntime;
  let base: string;
  let failing: Server;
  let failingBase: string;
  const outputPaths: string[] = [];

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    await rt.setPolicies([{ id: 'pol_mail', effect: 'allow', actions: ['mail.*'] }]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (rt.app.server.address() as { port: number }).port;
    base = `http://127.0.0.1:${port}`;
    // The service behind a front that refuses every output record (the rest passes).
    failing = createServer((req, res) => {
      if (req.url?.endsWith('/output')) {
        outputPaths.push(req.url);
        req.resume();
        res.writeHead(403, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            error: { code: 'auth.scope_insufficient', message: 'refused at the front', request_id: 'req_front' },
          }),
        );
        return;
      }
      const inner = request(
        { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(inner);
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    failingBase = `http://127.0.0.1:${(failing.address() as { port: number }).port}`;
  }, 240_000);
  afterAll(async () => {
    await new Promise((resolve) => failing?.close(resolve));
    await rt?.close();
  });

  /** The agent's decisions, oldest first, with their outputs. */
  const decisions = async (agent: string) =>
    ((await rt.getOk(`/v1/decisions?agent_id=${agent}&limit=100`)).data as JsonObject[]).reverse();
  const last = async (agent: string) => (await decisions(agent)).at(-1)!;
  const textOf = (r: Result) => r.content.filter((c) => c.type === 'text').map((c) => c.text as string);

  describe('secrets: block, pii: redact, server_labels: true, labels by tool glob', () => {
    const agent = `output-a-${suffix}`;
    let client: Client;
    beforeAll(async () => {
      ({ client } = await connect(
        agent,
        `output:
  labels:
    - tools: ["files_*"]
      labels: [private]
  server_labels: true
  detect: { secrets: block, pii: redact }
`,
        base,
        rt.testKey,
      ));
    }, 60_000);
    afterAll(() => client?.close());

    it('an open-world tool (no annotations) is untrusted; its personal data is redacted and recorded, never the text', async () => {
      const r = (await client.callTool({ name: 'inbox_read', arguments: {} })) as Result;
      expect(r.isError).toBeUndefined();
      expect(textOf(r)).toEqual(['From: Ada <[redacted:pii]>\nCall me on [redacted:pii] before Friday.']);
      const d = await last(agent);
      expect(d.action).toBe('mail.inbox_read');
      expect(d.output).toEqual({
        labels: ['untrusted', 'pii'],
        findings: [
          { kind: 'pii', rule: 'email', count: 1, action: 'redact' },
          { kind: 'pii', rule: 'phone', count: 1, action: 'redact' },
        ],
        recorded_at: expect.any(String),
      });
      expect(JSON.stringify(d)).not.toContain('ada.lovelace');
      expect(JSON.stringify(d)).not.toContain('7946');
      // The labels joined the proxy's session before the result reached the client.
      const session = await rt.getOk(`/v1/sessions/${d.session_id as string}`);
      expect((session.labels as JsonObject[]).map((l) => [l.label, l.source, l.decision_id])).toEqual([
        ['pii', 'gateway', d.id],
        ['untrusted', 'gateway', d.id],
      ]);
    });

    it('a tool the configuration names carries only its labels; a closed tool with nothing found records nothing', async () => {
      const files = (await client.callTool({ name: 'files_read', arguments: { path: 'q3.txt' } })) as Result;
      expect(textOf(files)).toEqual(['contents of q3.txt: quarterly numbers']);
      expect((await last(agent)).output).toMatchObject({ labels: ['private'], findings: [] });

      const sum = (await client.callTool({ name: 'calc', arguments: { a: 2, b: 3 } })) as Result;
      expect(textOf(sum)).toEqual(['5']);
      const d = await last(agent);
      expect(d.action).toBe('mail.calc');
      expect(d.output).toBeNull();
    });

    it('a secret blocks the result: isError with the kind, no label, the finding recorded', async () => {
      const r = (await client.callTool({ name: 'config_dump', arguments: {} })) as Result;
      expect(r.isError).toBe(true);
      expect(textOf(r)).toEqual(['blocked by agent-authz: secret in the result']);
      expect(JSON.stringify(r)).not.toContain('AKIA');
      const d = await last(agent);
      expect(d.output).toMatchObject({
        labels: [],
        findings: [{ kind: 'secret', rule: 'aws-access-key', count: 1, action: 'block' }],
      });
      // The tool ran: its decision is confirmed (after the answer, settle-queue.ts), not rejected.
      await expect
        .poll(async () => (await rt.getOk(`/v1/decisions/${d.id}`)).status, { timeout: 5000 })
        .toBe('confirmed');
    });

    it('structuredContent is read as JSON and redacted in place; images are counted as skipped', async () => {
      const r = (await client.callTool({ name: 'contact_card', arguments: {} })) as Result;
      expect(r.structuredContent).toEqual({ name: 'Grace', email: '[redacted:pii]' });
      expect(textOf(r)).toEqual(['{"name":"Grace","email":"[redacted:pii]"}']);
      expect((await last(agent)).output).toMatchObject({
        labels: ['pii'],
        findings: [{ kind: 'pii', rule: 'email', count: 2, action: 'redact' }],
      });

      const photo = (await client.callTool({ name: 'photo', arguments: {} })) as Result;
      expect(photo.content[0]).toMatchObject({ type: 'image', mimeType: 'image/png' });
      expect((await last(agent)).output).toMatchObject({
        labels: [],
        findings: [{ kind: 'skipped', rule: 'image', count: 1, action: 'skipped' }],
      });
    });

    it("an embedded resource's textual blob is decoded, read and redacted", async () => {
      const r = (await client.callTool({ name: 'attachment', arguments: {} })) as Result;
      const resource = r.content[0]!.resource as { blob: string; mimeType: string };
      expect(resource.mimeType).toBe('text/csv');
      expect(Buffer.from(resource.blob, 'base64').toString('utf8')).toBe('name,card\nAda,[redacted:pii]\n');
      expect((await last(agent)).output).toMatchObject({
        labels: ['pii'],
        findings: [{ kind: 'pii', rule: 'card', count: 1, action: 'redact' }],
      });
    });

    it('labels the server declares count with server_labels: true (malformed ones ignored)', async () => {
      const r = (await client.callTool({ name: 'tagged', arguments: {} })) as Result;
      expect(textOf(r)).toEqual(['payroll summary']);
      expect((await last(agent)).output).toMatchObject({ labels: ['private', 'payroll'], findings: [] });
    });

    it('resources/read contents and prompts/get messages are read too', async () => {
      const resource = await client.readResource({ uri: 'mail://1' });
      expect(resource.contents[0]).toMatchObject({
        text: 'From: Ada <[redacted:pii]>\nCall me on [redacted:pii] before Friday.',
      });
      const read = await last(agent);
      expect(read.action).toBe('mail.resources_read');
      expect(read.output).toMatchObject({ labels: ['pii'], findings: [{ rule: 'email' }, { rule: 'phone' }] });

      const prompt = await client.getPrompt({ name: 'reply' });
      expect(prompt.messages[0]!.content).toEqual({
        type: 'text',
        text: 'Reply to this:\nFrom: Ada <[redacted:pii]>\nCall me on [redacted:pii] before Friday.',
      });
      expect((await last(agent)).output).toMatchObject({
        labels: ['pii'],
        findings: [{ rule: 'email' }, { rule: 'phone' }],
      });
    });
  });

  describe('secrets: label, pii: block, server labels not honoured', () => {
    const agent = `output-b-${suffix}`;
    let client: Client;
    beforeAll(async () => {
      ({ client } = await connect(agent, 'output:\n  detect: { secrets: label, pii: block }\n', base, rt.testKey));
    }, 60_000);
    afterAll(() => client?.close());

    it('label mode: the result passes unchanged and the session gains the label', async () => {
      const r = (await client.callTool({ name: 'config_dump', arguments: {} })) as Result;
      expect(r.isError).toBeUndefined();
      expect(textOf(r)[0]).toContain('AKIAZ3MHJ8PTYQ2XN4WB');
      expect((await last(agent)).output).toMatchObject({
        labels: ['secret'],
        findings: [{ kind: 'secret', rule: 'aws-access-key', count: 1, action: 'label' }],
      });
    });

    it('block mode on a tool, a resource and a prompt: isError, or JSON-RPC -32001; no label', async () => {
      const r = (await client.callTool({ name: 'inbox_read', arguments: {} })) as Result;
      expect(r).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: 'blocked by agent-authz: pii in the result' }],
      });
      expect((await last(agent)).output).toMatchObject({
        labels: [],
        findings: [
          { rule: 'email', action: 'block' },
          { rule: 'phone', action: 'block' },
        ],
      });
      await expect(client.readResource({ uri: 'mail://1' })).rejects.toMatchObject({
        code: -32001,
        message: expect.stringContaining('blocked by agent-authz: pii in the result'),
      });
      await expect(client.getPrompt({ name: 'reply' })).rejects.toMatchObject({ code: -32001 });
      expect((await last(agent)).output).toMatchObject({ labels: [] });
    });

    it('server labels are ignored without server_labels: true', async () => {
      await client.callTool({ name: 'tagged', arguments: {} });
      expect((await last(agent)).output).toBeNull();
    });
  });

  describe('when the output record fails, the result is blocked (fail closed)', () => {
    const agent = `output-c-${suffix}`;
    let client: Client;
    let stderr: () => string;
    beforeAll(async () => {
      ({ client, stderr } = await connect(agent, 'output:\n  detect: { pii: label }\n', failingBase, rt.testKey));
    }, 60_000);
    afterAll(() => client?.close());

    it('a result with labels is blocked; one with nothing to record passes (no record made)', async () => {
      const r = (await client.callTool({ name: 'inbox_read', arguments: {} })) as Result;
      expect(r).toMatchObject({
        isError: true,
        content: [
          { type: 'text', text: expect.stringMatching(/^blocked by agent-authz: the result could not be recorded/) },
        ],
      });
      expect(JSON.stringify(r)).not.toContain(MAIL.slice(0, 20));
      expect(outputPaths).toHaveLength(1);
      expect(stderr()).toContain('could not record the output');
      expect((await last(agent)).output).toBeNull();

      const sum = (await client.callTool({ name: 'calc', arguments: { a: 1, b: 1 } })) as Result;
      expect(textOf(sum)).toEqual(['2']);
      expect(outputPaths).toHaveLength(1);
      await expect(client.readResource({ uri: 'mail://1' })).rejects.toMatchObject({ code: -32001 });
    });
  });
});
