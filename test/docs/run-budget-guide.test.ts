/**
 * docs/budgets-and-limits.md, "A per-run budget stopping an agent run", works
 * as written: the page's agent, taken from its fenced block, runs against a real
 * `node bin/authz.js serve` started as docs/agents.md says (a fresh data dir,
 * the printed test key), installs its per-run budgets, and prints exactly the
 * output the page shows (the run stopped by its USD budget, what is left, the
 * next run allowed), and again the same when run a second time; it also
 * type-checks under strict TypeScript. Saved in the
 * checkout's root (so `agent-authz/client` resolves to this checkout) and
 * removed after.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const run = promisify(execFile);
const PAGE = readFileSync(join(ROOT, 'docs', 'budgets-and-limits.md'), 'utf8');
const SECTION = '### A per-run budget stopping an agent run';

/** The section's agent (its js block) and the output block after it. */
function agentOfSection(): { code: string; output: string } {
  const start = PAGE.indexOf(`\n${SECTION}`);
  expect(start, `docs/budgets-and-limits.md has "${SECTION}"`).toBeGreaterThanOrEqual(0);
  const end = PAGE.indexOf('\n#', start + 1);
  const blocks = [...PAGE.slice(start, end < 0 ? undefined : end).matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!,
    body: m[2]!,
  }));
  const i = blocks.findIndex((b) => b.lang === 'js');
  expect(i).toBeGreaterThanOrEqual(0);
  expect(blocks[i + 1]?.lang).toBe('text');
  return { code: blocks[i]!.body, output: blocks[i + 1]!.body };
}

describe('docs/budgets-and-limits.md: a per-run budget stopping an agent run', () => {
  let server: FreshServe | undefined;
  const written: string[] = [];
  const inRoot = (name: string, text: string) => {
    const path = join(ROOT, name);
    writeFileSync(path, text);
    written.push(path);
    return path;
  };

  beforeAll(async () => {
    ensureBuilt();
    server = await startFreshServe('authz-run-budget-doc-');
  }, 60_000);

  afterAll(async () => {
    for (const path of written) rmSync(path, { force: true });
    await server?.stop();
  });

  it('the agent prints what the page shows', async () => {
    const { code, output } = agentOfSection();
    expect(code).toContain("from 'agent-authz/client'");
    expect(code).toContain("scope: 'session'");
    const file = inRoot(`.run-budget-doc-${process.pid}.mjs`, code);
    const env = {
      ...process.env,
      AUTHZ_URL: server!.base,
      AUTHZ_API_KEY: server!.testKey,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    };
    const { stdout } = await run(process.execPath, [file], { cwd: ROOT, env });
    expect(stdout).toBe(output);
    // Run again, as a reader does: the same (no policy.already_exists; a run of its own).
    const again = await run(process.execPath, [file], { cwd: ROOT, env });
    expect(again.stdout).toBe(output);
  });

  it('the agent is strict TypeScript, unchanged', async () => {
    const { code } = agentOfSection();
    const file = inRoot(`.run-budget-doc-${process.pid}.mts`, code);
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
});
