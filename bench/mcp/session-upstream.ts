/**
 * A stateful MCP server over Streamable HTTP on 127.0.0.1 (the SDK's McpServer,
 * one transport per session, one tool `ping_tool`) that counts its open
 * sessions: the upstream of the sessions bench (bench/mcp/sessions.ts) and of
 * the test that expired sessions leave nothing (test/mcp/session-release.test.ts).
 *
 * @example
 * const upstream = await startSessionUpstream('bench-sessions');
 * // ... proxy in front of upstream.url; later upstream.sessions() === 0
 * upstream.close();
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface SessionUpstream {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  /** Sessions open now (a session leaves when its transport closes, e.g. on DELETE). */
  sessions(): number;
  close(): void;
}

export async function startSessionUpstream(name: string): Promise<SessionUpstream> {
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
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => sid,
        onsessioninitialized: (s) => void transports.set(s, transport!),
      });
      transport.onclose = () => void transports.delete(sid);
      const server = new McpServer({ name, version: '1.0.0' });
      server.registerTool('ping_tool', { description: 'answers pong' }, async () => ({
        content: [{ type: 'text', text: 'pong' }],
      }));
      await server.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`,
    sessions: () => transports.size,
    close: () => http.close(),
  };
}
