/**
 * docs/mcp.md's "One gateway for many agents" works as written: a real
 * `node bin/authz.js serve` (a fresh data dir, the printed test key) with
 * section 4's policy, the stand-in authorization server and the gateway started
 * by the section's own commands (ports and the config file name aside), the
 * 401 a client without a token sees, both agents through the gateway with the
 * SDK's OAuth client, and the decisions listed by user, each printing exactly
 * what the page shows.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachLine, freePort, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';
import { ensureProxyBuilt } from './helpers/proxy.js';

const run = promisify(execFile);
const PAGE = readFileSync(join(ROOT, 'docs', 'mcp.md'), 'utf8');

/** The fenced blocks of a section (`## <title>`) of the page, of one language, in order. */
function blocks(title: string, lang: string): string[] {
  const start = PAGE.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/mcp.md has no section "## ${title}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  const text = PAGE.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```(\w*)\n([\s\S]*?)```/g)].filter((m) => m[1] === lang).map((m) => m[2]!);
}

const SECTION = 'One gateway for many agents';
const normalised = (text: string) => text.replace(/dec_\w+/g, 'dec_...');

describe('docs/mcp.md: One gateway for many agents', () => {
  let server: FreshServe | undefined;
  let env: NodeJS.ProcessEnv;
  const children: Array<{ child: ChildProcess; exited: Promise<unknown> }> = [];
  const config = `.mcp-gateway-doc-${process.pid}.yaml`;
  let asPort: string;
  let gwPort: string;
  /** A command of the page with this test's ports and config file name. */
  const asWritten = (command: string) =>
    command.replaceAll('gateway.yaml', config).replaceAll('9000', asPort).replaceAll('8092', gwPort);
  const sh = async (script: string) => (await run('sh', ['-c', script], { cwd: ROOT, env })).stdout;

  /** Starts a `... &` line of the page; resolves with the first line that `ready` accepts. */
  async function background(line: string, ready: (line: string) => boolean): Promise<string> {
    expect(line).toMatch(/ &$/);
    const child = spawn('sh', ['-c', `exec env ${asWritten(line.replace(/ &$/, ''))}`], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    children.push({ child, exited });
    return new Promise<string>((resolve, reject) => {
      const output: string[] = [];
      const look = (l: string) => {
        output.push(l);
        if (ready(l)) resolve(l);
      };
      eachLine(child.stdout!, look);
      eachLine(child.stderr!, look);
      void exited.then(() => reject(new Error(`${line} exited:\n${output.join('\n')}`)));
    });
  }

  beforeAll(async () => {
    ensureProxyBuilt();
    server = await startFreshServe('authz-mcp-gateway-doc-');
    env = {
      ...process.env,
      AUTHZ_URL: server.base,
      AUTHZ_API_KEY: server.testKey,
      AUTHZ_ACCOUNT: server.accountId,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    };
    // The reader added section 4's policy before: its commands but the agent's run.
    const section4 = PAGE.slice(PAGE.indexOf('\n## 4.'), PAGE.indexOf('\n## 5.'));
    const policy = /```sh\n([\s\S]*?)```/.exec(section4)![1]!.trim().split('\n');
    expect(policy.at(-1)).toMatch(/^node dist\/examples\/agents\/mcp-agent\.js/);
    await sh(policy.slice(0, -1).join('\n'));
    asPort = String(await freePort());
    gwPort = String(await freePort());
    writeFileSync(join(ROOT, config), asWritten(blocks(SECTION, 'yaml')[0]!));
  }, 120_000);

  afterAll(async () => {
    for (const { child, exited } of children.reverse()) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(join(ROOT, config), { force: true });
    await server?.stop();
  });

  it('the stand-in, the gateway, the 401, both agents and the decisions by user, as the page shows', async () => {
    const [issuerLine] = blocks(SECTION, 'sh')[0]!.trim().split('\n');
    const printed = await background(issuerLine!, (l) => l.startsWith('{'));
    expect(JSON.parse(printed)).toMatchObject({ issuer: `http://127.0.0.1:${asPort}` });

    const [gatewayLine, curlLine] = blocks(SECTION, 'sh')[1]!.trim().split('\n');
    const listening = await background(gatewayLine!, (l) => l.includes('listening on'));
    expect(listening).toBe(`authz mcp-proxy: listening on http://127.0.0.1:${gwPort}/mcp`);
    const [challenge, decisions] = blocks(SECTION, 'text');
    expect((await sh(asWritten(curlLine!))).replace(/\r/g, '')).toBe(asWritten(challenge!));

    const agents = blocks(SECTION, 'sh')[2]!.trim().split('\n');
    expect(agents).toHaveLength(2);
    const section4Output = /```text\n([\s\S]*?)```/.exec(
      PAGE.slice(PAGE.indexOf('\n## 4.'), PAGE.indexOf('\n## 5.')),
    )![1]!;
    for (const agentLine of agents) expect(normalised(await sh(asWritten(agentLine)))).toBe(section4Output);

    // The first agent's line with a wrong secret: the agent says the gateway refused the client, exit 1.
    const wrong = asWritten(agents[0]!).replace(/--client (\S+?):\S+/, '--client $1:not-the-secret');
    expect(wrong).toContain(':not-the-secret');
    const refused = await run('sh', ['-c', wrong], { cwd: ROOT, env }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^http://127\\.0\\.0\\.1:${gwPort}/mcp refused the client support-bot-7 \\(--client\\): .*; check its secret`,
      ),
    );
    expect(refused.stderr).not.toContain('could not start the proxy');

    expect(await sh(blocks(SECTION, 'sh')[3]!)).toBe(decisions);
    const bob = (await (
      await fetch(`${server!.base}/v1/decisions?on_behalf_of=bob`, {
        headers: { authorization: `Bearer ${server!.testKey}` },
      })
    ).json()) as {
      data: Array<{ agent_id: string; session_id: string }>;
    };
    expect(new Set(bob.data.map((d) => d.agent_id))).toEqual(new Set(['support-bot-8']));
    expect(bob.data.every((d) => /^mcp-[0-9a-f-]{36}$/.test(d.session_id))).toBe(true);
  });
});
