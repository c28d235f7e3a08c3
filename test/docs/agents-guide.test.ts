/**
 * docs/agents.md works as written: its TypeScript and Python agents, taken
 * from the page's fenced blocks, run against a real `node bin/authz.js serve`
 * started as the page says (a fresh data dir, the printed test key) and print
 * exactly the output the page shows; the TypeScript agent also type-checks
 * under strict TypeScript, as the page claims. The snippets are saved in the
 * checkout's root, where the page tells the reader to save them (that is what
 * makes `agent-authz/client` resolve to this checkout), and removed after.
 *
 * AUTHZ_TEST_PYTHON picks another interpreter than python3.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const run = promisify(execFile);
const PYTHON = process.env.AUTHZ_TEST_PYTHON ?? 'python3';
const PAGE = readFileSync(join(ROOT, 'docs', 'agents.md'), 'utf8');

/** The fenced blocks of a section of the page (`## <n>. ...`), in order, with their languages. */
function blocksOf(section: string): Array<{ lang: string; body: string }> {
  const start = PAGE.indexOf(`\n## ${section}`);
  if (start < 0) throw new Error(`docs/agents.md has no section "## ${section}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  const text = PAGE.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** The agent of a section and the output shown after it. */
function agentOf(section: string, lang: string): { code: string; output: string } {
  const blocks = blocksOf(section);
  const i = blocks.findIndex((b) => b.lang === lang);
  expect(i, `a ${lang} block in "${section}"`).toBeGreaterThanOrEqual(0);
  expect(blocks[i + 1]?.lang, `the output block after the ${lang} block`).toBe('text');
  return { code: blocks[i]!.body, output: blocks[i + 1]!.body };
}

describe('docs/agents.md', () => {
  let server: FreshServe | undefined;
  let env: NodeJS.ProcessEnv;
  const written: string[] = [];

  /** Writes a file into the checkout's root (removed after the tests). */
  const inRoot = (name: string, text: string) => {
    const path = join(ROOT, name);
    writeFileSync(path, text);
    written.push(path);
    return path;
  };

  beforeAll(async () => {
    ensureBuilt();
    expect(
      blocksOf('1.')
        .map((b) => b.body)
        .join('\n'),
    ).toContain('node bin/authz.js serve');
    server = await startFreshServe('authz-agents-doc-');
    const { base, testKey } = server;
    env = {
      ...process.env,
      AUTHZ_URL: base,
      AUTHZ_API_KEY: testKey,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    };
  }, 60_000);

  afterAll(async () => {
    for (const path of written) rmSync(path, { force: true });
    await server?.stop();
  });

  it('the TypeScript agent prints what the page shows', async () => {
    const { code, output } = agentOf('2.', 'js');
    expect(code).toContain("from 'agent-authz/client'");
    const file = inRoot(`.agents-doc-${process.pid}.mjs`, code);
    const { stdout } = await run(process.execPath, [file], { cwd: ROOT, env });
    expect(stdout).toBe(output);
  });

  it('the TypeScript agent is strict TypeScript, unchanged', async () => {
    const { code } = agentOf('2.', 'js');
    const file = inRoot(`.agents-doc-${process.pid}.mts`, code);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--types',
      'node',
      '--skipLibCheck',
      file,
    ];
    const result = await run(process.execPath, [tsc, ...args], { cwd: ROOT }).then(
      () => '',
      (e: { stdout?: string }) => e.stdout ?? 'tsc failed',
    );
    expect(result).toBe('');
  });

  it('the Python agent prints what the page shows', async () => {
    const { code, output } = agentOf('3.', 'python');
    expect(blocksOf('3.').length).toBeGreaterThanOrEqual(2);
    expect(PAGE).toContain('PYTHONPATH=clients/python python3 agent.py');
    const file = inRoot(`.agents-doc-${process.pid}.py`, code);
    const { stdout } = await run(PYTHON, [file], {
      cwd: ROOT,
      env: { ...env, PYTHONPATH: join(ROOT, 'clients', 'python'), PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(stdout).toBe(output);
  });
});
