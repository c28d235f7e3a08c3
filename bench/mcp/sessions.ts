/**
 * `npm run bench:mcp-sessions`: the memory of `authz mcp-proxy --listen` under
 * a flood of MCP sessions (issue 30: with `--max-sessions 1000` and
 * `--session-idle-seconds 5`, the proxy's RSS after 20,000 `initialize` calls
 * and 10 s idle is within 50 MB of its RSS after the first 1,000).
 *
 * The proxy runs as its own process (`node bin/authz.js mcp-proxy --listen`)
 * in front of a Streamable HTTP MCP server in this process (the SDK's
 * McpServer, one session per client). Initialize calls are sent 20 at a time
 * until 20,000 have opened a session; a 503 (the cap) is retried after 100 ms.
 * The proxy's RSS (/proc/<pid>/status) is read after the first 1,000 sessions,
 * after the 20,000th, and after 10 s idle. Nothing is decided: the service is
 * never called for an initialize. Prints the figures (JSON last).
 *
 *   node dist/bench/mcp/sessions.js [--sessions 20000] [--idle 5] [--max 1000]
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { packageRoot } from '../../compiler/index.js';
import { startChild, stopChild } from '../../scripts/mcp-conformance.js';

const { values } = parseArgs({ options: { sessions: { type: 'string' }, idle: { type: 'string' }, max: { type: 'string' } } });
const SESSIONS = Number(values.sessions ?? 20_000);
const IDLE = Number(values.idle ?? 5);
const MAX = Number(values.max ?? 1000);
const CONCURRENCY = 20;

/** A stateful Streamable HTTP MCP server with one tool, on 127.0.0.1. */
async function upstreamServer(): Promise<{ url: string; sessions: () => number; close(): void }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const id = req.headers['mcp-session-id'] as string | undefined;
    let transport = id === undefined ? undefined : transports.get(id);
    if (!transport) {
      if (id !== undefined) return void res.writeHead(404).end();
      const sid = randomUUID();
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => sid, onsessioninitialized: (s) => void transports.set(s, transport!) });
      transport.onclose = () => void transports.delete(sid);
      const server = new McpServer({ name: 'bench-sessions', version: '1.0.0' });
      server.registerTool('ping_tool', { description: 'answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
      await server.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`, sessions: () => transports.size, close: () => http.close() };
}

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function main(): Promise<void> {
  const upstream = await upstreamServer();
  const dir = mkdtempSync(join(tmpdir(), 'authz-bench-sessions-'));
  writeFileSync(join(dir, 'mcp.yaml'), 'agent_id: bench-sessions\nserver: bench\n');
  const proxy = await startChild(
    process.execPath,
    [join(packageRoot(), 'bin', 'authz.js'), 'mcp-proxy', '--config', join(dir, 'mcp.yaml'), '--listen', '127.0.0.1:0', '--upstream-url', upstream.url,
      '--url', 'http://127.0.0.1:9', '--key', 'svc_test_sk_never_called0000000000000000000000', '--max-sessions', String(MAX), '--session-idle-seconds', String(IDLE)],
    { ready: (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1] },
  );
  const pid = proxy.child.pid!;
  let opened = 0;
  let refused = 0;
  let rssAt1000 = 0;
  const started = performance.now();
  const initialize = async (): Promise<void> => {
    for (;;) {
      const r = await fetch(proxy.value, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
      });
      await r.text();
      if (r.status === 200) return;
      if (r.status !== 503) throw new Error(`initialize: HTTP ${r.status}`);
      refused++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  try {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (opened < SESSIONS) {
          opened++;
          await initialize();
          if (opened === 1000 && rssAt1000 === 0) rssAt1000 = rssMiB(pid);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const rssAfterAll = rssMiB(pid);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const rssAfterIdle = rssMiB(pid);
    const figures = {
      sessions_opened: SESSIONS,
      refused_503: refused,
      seconds: Math.round(seconds),
      max_sessions: MAX,
      idle_seconds: IDLE,
      rss_mib_after_1000: Math.round(rssAt1000),
      rss_mib_after_all: Math.round(rssAfterAll),
      rss_mib_after_10s_idle: Math.round(rssAfterIdle),
      growth_mib: Math.round(rssAfterIdle - rssAt1000),
      upstream_sessions_left: upstream.sessions(),
    };
    process.stdout.write(
      `${SESSIONS} initialize calls opened sessions in ${figures.seconds} s (${refused} answered 503 at the cap of ${MAX}, retried); ` +
        `proxy RSS ${figures.rss_mib_after_1000} MiB after 1,000, ${figures.rss_mib_after_all} MiB after all, ${figures.rss_mib_after_10s_idle} MiB after 10 s idle ` +
        `(${figures.growth_mib >= 0 ? '+' : ''}${figures.growth_mib} MiB; target within 50 MB: ${Math.abs(rssAfterIdle - rssAt1000) * 1.048576 <= 50 ? 'met' : 'NOT met'}); ` +
        `upstream sessions still open: ${figures.upstream_sessions_left}\n${JSON.stringify(figures)}\n`,
    );
  } finally {
    await stopChild(proxy.child);
    upstream.close();
  }
}

await main();
