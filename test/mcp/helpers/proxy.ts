/**
 * For the MCP proxy's tests: the build the proxy runs from, a real
 * `node bin/authz.js mcp-proxy` child driven by the SDK's own MCP client (over
 * stdio, or over Streamable HTTP with --listen), the test tool server
 * (fixtures/tools-server.mjs) and what it recorded.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ensureBuilt, eachLine, newestSource, ROOT } from '../../helpers/server-process.js';

export const BIN = join(ROOT, 'bin', 'authz.js');
export const TOOLS_SERVER = join(ROOT, 'test', 'mcp', 'fixtures', 'tools-server.mjs');
const BUILT = [
  join(ROOT, 'dist', 'clients', 'mcp-proxy', 'cli.js'),
  join(ROOT, 'dist', 'permit-verifier', 'index.js'),
  join(ROOT, 'dist', 'examples', 'agents', 'mcp-agent.js'),
  join(ROOT, 'dist', 'examples', 'agents', 'support-tools-server.js'),
  join(ROOT, 'dist', 'examples', 'agents', 'bank-tools-server.js'),
];

/** dist/ with the proxy, the verifier and the agent examples, built when missing or older than their sources. */
export function ensureProxyBuilt(): void {
  ensureBuilt();
  const newest = Math.max(
    ...['clients', 'permit-verifier', join('examples', 'agents')].map((d) => newestSource(join(ROOT, d))),
  );
  if (BUILT.every((f) => existsSync(f) && statSync(f).mtimeMs >= newest)) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe' });
  } catch (err) {
    if (!BUILT.every((f) => existsSync(f))) throw err;
  }
}

/** A scratch folder with the proxy's YAML configuration written in it, a record file and a tools folder. */
export function scratch(configYaml: string): { dir: string; config: string; record: string; tools: string } {
  const dir = mkdtempSync(join(tmpdir(), 'authz-mcp-'));
  const config = join(dir, 'mcp.yaml');
  writeFileSync(config, configYaml);
  const record = join(dir, 'record.jsonl');
  writeFileSync(record, '');
  const tools = join(dir, 'tools');
  mkdirSync(tools);
  return { dir, config, record, tools };
}

export interface RecordedCall {
  tool: string;
  arguments: Record<string, unknown>;
  meta: Record<string, unknown> | null;
  permit: { valid: true; claims: Record<string, unknown> } | { valid: false; code: string };
}

/** The calls the tool server received, in order. */
export function recorded(file: string): RecordedCall[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as RecordedCall);
}

/** The environment of the proxy (and through it of the tool server): PATH and friends, plus `extra`. */
export function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('AUTHZ_') && k !== 'DATABASE_URL') env[k] = v;
  return { ...env, ...extra };
}

export interface StdioProxy {
  client: Client;
  /** What the proxy printed on stderr so far. */
  stderr: () => string;
  close(): Promise<void>;
}

/**
 * `node bin/authz.js mcp-proxy <args> -- node tools-server.mjs` (or another fixture `server`), connected to an SDK client over stdio.
 */
export async function startStdioProxy(
  args: string[],
  env: Record<string, string>,
  server = TOOLS_SERVER,
): Promise<StdioProxy> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp-proxy', ...args, '--', process.execPath, server],
    env: childEnv(env),
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const client = new Client({ name: 'proxy-test-agent', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`the proxy did not start: ${(e as Error).message}\n${err}`);
  }
  return { client, stderr: () => err, close: () => client.close() };
}

/** A child process that prints one JSON line when ready: the line, and the process. */
export async function startPrinting(
  command: string,
  args: string[],
  env: Record<string, string>,
  pick: (line: string) => string | undefined,
) {
  const child = spawn(command, args, { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const value = await new Promise<string>((resolve, reject) => {
    const look = (line: string) => {
      output.push(line);
      const v = pick(line);
      if (v !== undefined) resolve(v);
    };
    eachLine(child.stdout!, look);
    eachLine(child.stderr!, look);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}:\n${output.join('\n')}`)));
  });
  return { child, value, output };
}

/** Stops a child and waits for its exit. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** An SDK client over Streamable HTTP. */
export async function httpClient(url: string): Promise<Client> {
  const client = new Client({ name: 'proxy-test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Runs the proxy to its exit (start-up checks): the exit code and stderr. */
export function runProxyToExit(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, 'mcp-proxy', ...args],
      { env: childEnv(env), timeout: 20_000 },
      (error, _stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stderr });
      },
    );
    child.stdin?.end();
  });
}

/** The text of a tool result's first content block. */
export function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}
