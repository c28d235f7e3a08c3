/**
 * docs/mcp.md works as written: a real `node bin/authz.js serve` started as
 * section 1 says (a fresh data dir, the printed test key), the configuration of
 * section 2 saved in the checkout, and the commands of sections 3, 4 and 5 run
 * through `sh` as they stand (the config file name and the port aside), each
 * printing exactly the output the page shows (decision ids aside: they are
 * `dec_...` on the page); section 6's configuration and agent saved likewise,
 * its policies and agent run as written; the reference's "Mappings declared by
 * the server" likewise (bank.yaml saved, its policy and the example agent in
 * front of examples/agents/bank-tools-server.ts, decided in the server's namespace).
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachLine, freePort, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';
import { ensureProxyBuilt } from '../mcp/helpers/proxy.js';

const run = promisify(execFile);
const PAGE = readFileSync(join(ROOT, 'docs', 'mcp.md'), 'utf8');

/** The fenced blocks of a section of the page (`## <n>. ...`), in order, with their languages. */
function blocksOf(section: string): Array<{ lang: string; body: string }> {
  const start = PAGE.indexOf(`\n## ${section}`);
  if (start < 0) throw new Error(`docs/mcp.md has no section "## ${section}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  const text = PAGE.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

const block = (section: string, lang: string, nth = 0) => {
  const found = blocksOf(section).filter((b) => b.lang === lang)[nth];
  if (!found) throw new Error(`no ${lang} block #${nth} in "${section}"`);
  return found.body;
};

const normalised = (text: string) => text.replace(/dec_\w+/g, 'dec_...');

describe('docs/mcp.md', () => {
  let server: FreshServe | undefined;
  let env: NodeJS.ProcessEnv;
  const config = `.mcp-doc-${process.pid}.yaml`;
  /** A command of the page with this test's config file name. */
  const asWritten = (command: string) => command.replaceAll('mcp.yaml', config);

  beforeAll(async () => {
    ensureProxyBuilt();
    expect(block('1.', 'sh')).toContain('node bin/authz.js serve');
    server = await startFreshServe('authz-mcp-doc-');
    const { base, testKey } = server;
    env = {
      ...process.env,
      AUTHZ_URL: base,
      AUTHZ_API_KEY: testKey,
      AUTHZ_ACCOUNT: server.accountId,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    };
    // Section 2: the configuration, saved in the clone.
    writeFileSync(join(ROOT, config), block('2.', 'yaml'));
  }, 120_000);

  const kbConfig = `.mcp-doc-kb-${process.pid}.yaml`;
  const bankConfig = `.mcp-doc-bank-${process.pid}.yaml`;
  const kbAgent = `.mcp-doc-kb-agent-${process.pid}.mjs`;

  afterAll(async () => {
    rmSync(join(ROOT, config), { force: true });
    rmSync(join(ROOT, kbConfig), { force: true });
    rmSync(join(ROOT, bankConfig), { force: true });
    rmSync(join(ROOT, kbAgent), { force: true });
    await server?.stop();
  });

  const sh = async (script: string) => (await run('sh', ['-c', script], { cwd: ROOT, env })).stdout;

  it('section 3: the agent, through the proxy, prints what the page shows', async () => {
    const command = block('3.', 'sh');
    expect(command.trim()).toBe('node dist/examples/agents/mcp-agent.js mcp.yaml');
    expect(normalised(await sh(asWritten(command)))).toBe(block('3.', 'text'));
  });

  it('section 4: the new policy, then the agent again, prints what the page shows', async () => {
    expect(normalised(await sh(asWritten(block('4.', 'sh'))))).toBe(block('4.', 'text'));
  });

  it('section 5: the proxy over Streamable HTTP, and the agent through it', async () => {
    const [serveLine, agentLine] = block('5.', 'sh').trim().split('\n');
    expect(serveLine).toMatch(/ --listen 127\.0\.0\.1:8091 .* &$/);
    const port = String(await freePort());
    const proxy = spawn('sh', ['-c', `exec ${asWritten(serveLine!.replace(/ &$/, '')).replace('8091', port)}`], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const proxyExited = new Promise((resolve) => proxy.once('exit', resolve));
    try {
      const listening = await new Promise<string>((resolve, reject) => {
        eachLine(proxy.stderr!, (line) => {
          if (line.includes('listening on')) resolve(line);
        });
        void proxyExited.then(() => reject(new Error('the proxy exited')));
      });
      expect(listening.replace(port, '8091')).toBe('authz mcp-proxy: listening on http://127.0.0.1:8091/mcp');
      expect(normalised(await sh(agentLine!.replace('8091', port)))).toBe(block('4.', 'text'));
    } finally {
      proxy.kill('SIGTERM');
      await proxyExited;
    }
  });

  it('section 6: resources and prompts decided through the proxy with a policy, as the page shows', async () => {
    writeFileSync(join(ROOT, kbConfig), block('6.', 'yaml'));
    writeFileSync(join(ROOT, kbAgent), block('6.', 'js'));
    const script = block('6.', 'sh');
    expect(script.trim().split('\n').at(-1)).toBe('node kb-agent.mjs kb.yaml');
    expect(normalised(await sh(script.replaceAll('kb-agent.mjs', kbAgent).replaceAll('kb.yaml', kbConfig)))).toBe(
      block('6.', 'text'),
    );
  });

  it("mappings declared by the server: the example server's declaration, bank.yaml, the policy and the agent, as the page shows", async () => {
    const start = PAGE.indexOf('\n### Mappings declared by the server\n');
    const section = PAGE.slice(start, PAGE.indexOf('\n### ', start + 1));
    const fenced = (lang: string) =>
      [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].filter((m) => m[1] === lang).map((m) => m[2]!);
    // The declaration shown is the example server's own (the agent's run below shows the proxy deciding by it).
    const shown = JSON.parse(fenced('json')[0]!) as {
      name: string;
      inputSchema: { 'x-authzen-mapping': { evaluation: { action: { name: string }; resource: { id: string } } } };
    };
    const source = readFileSync(join(ROOT, 'examples', 'agents', 'bank-tools-server.ts'), 'utf8');
    const { evaluation } = shown.inputSchema['x-authzen-mapping'];
    expect(source).toContain(`name: "${evaluation.action.name}"`);
    expect(source).toContain(`id: '${evaluation.resource.id}'`);
    writeFileSync(join(ROOT, bankConfig), fenced('yaml')[0]!);
    const script = fenced('sh')[0]!;
    expect(script.trim().split('\n').at(-1)).toBe('node dist/examples/agents/mcp-agent.js --server bank bank.yaml');
    expect(normalised(await sh(script.replaceAll('bank.yaml', bankConfig)))).toBe(fenced('text')[0]);
    // Decided in the server's namespace, as the page says.
    const decisions = (await (
      await fetch(`${env.AUTHZ_URL}/v1/decisions?agent_id=treasury-bot`, {
        headers: { authorization: `Bearer ${env.AUTHZ_API_KEY}` },
      })
    ).json()) as {
      data: Array<{ action: string; resource: string; effect: string }>;
    };
    expect(decisions.data.map((d) => [d.action, d.resource, d.effect]).reverse()).toEqual([
      ['bank.get_balance', 'account:acc-1', 'deny'],
      ['bank.small_transfer', 'account:acc-1', 'allow'],
      ['bank.large_transfer', 'account:acc-1', 'deny'],
    ]);
  });

  it('the client configuration example is JSON naming the proxy command', () => {
    const json = JSON.parse(block('5.', 'json')) as { mcpServers: Record<string, { command: string; args: string[] }> };
    expect(json.mcpServers.support!.args.slice(0, 2)).toEqual(['authz', 'mcp-proxy']);
  });
});
