/**
 * README.md works as a new user types it: `npm start` (its script, `node
 * bin/authz.js serve`, on a fresh data dir with the quiet default log) prints
 * what "Run it" says (the embedded store and master key made, the account
 * `default` with a test and a live key, the examples loaded, where the
 * dashboard is); GET / leads a browser to the dashboard and the API reference
 * answers; then the shell blocks of "A first decision" run through `sh`, in
 * order, in a scratch folder standing for the clone (its `examples/` is the
 * clone's): the curl answers the decision the page shows (the same fields, in
 * the same order, the same values but for the id, times and token), and
 * validate, test, explain, compile and push each exit 0 printing what their
 * comments say. `npx authz` runs this checkout's bin; the printed key and the
 * service's address replace the page's placeholders.
 */
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAsTyped, type ShellResult } from '../helpers/doc-shell.js';
import { ensureBuilt, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const PAGE = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The fenced blocks of a `## ` section, in order. */
function blocksOf(section: string): Array<{ lang: string; body: string }> {
  const start = PAGE.indexOf(`\n## ${section}\n`);
  if (start < 0) throw new Error(`README.md has no section "## ${section}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  return [...PAGE.slice(start, end < 0 ? undefined : end).matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!,
    body: m[2]!,
  }));
}

/** A shell block's commands: `\` continuations joined, comments and blank lines dropped. */
function commands(body: string): string[] {
  return body
    .replace(/\\\n/g, '')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** Fields of a decision that differ from one request to the next. */
const VARYING = ['id', 'evaluated_at', 'expires_at', 'permit_token'];

describe('README.md, walked', () => {
  let server: FreshServe | undefined;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  /** Runs a page's shell text in the scratch clone: exit code and output. */
  const sh = (script: string): Promise<ShellResult> => runAsTyped(script, server!, dir, env);

  beforeAll(async () => {
    ensureBuilt();
    // "Run it": npm start is `node bin/authz.js serve`, at the quiet default log.
    const [run] = blocksOf('Run it');
    expect(run!.body).toContain('npm ci && npm start');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe('node bin/authz.js serve');
    server = await startFreshServe('authz-readme-', { LOG_LEVEL: '' });
    dir = mkdtempSync(join(tmpdir(), 'authz-readme-clone-'));
    symlinkSync(join(ROOT, 'examples'), join(dir, 'examples'));
    // The service stands at the commands' default address (AUTHZ_URL is that default's override).
    env = { ...process.env, AUTHZ_URL: server.base, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
    delete env.AUTHZ_API_KEY;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the first start prints what "Run it" says; GET / leads to the dashboard; the API reference answers', async () => {
    const out = server!.output.join('\n');
    expect(out).toMatch(/^Creating the embedded store in .+ \(first start\) \.\.\.$/m);
    expect(out).toMatch(/^Generated a master key in .+\.master-key \(mode 0600\)/m);
    expect(out).toMatch(/^Created account "default" \(acc_\w+\)\. These keys are shown once; store them now:$/m);
    expect(out).toMatch(/^ {2}test key: svc_test_sk_\w+$/m);
    expect(out).toMatch(/^ {2}live key: svc_live_sk_\w+$/m);
    const loaded = Number(/^Loaded (\d+) policies from examples\/ into the test environment\.$/m.exec(out)?.[1]);
    const listed = (await fetch(`${server!.base}/v1/policies?limit=100`, {
      headers: { authorization: `Bearer ${server!.testKey}` },
    }).then((r) => r.json())) as { data: unknown[] };
    expect(listed.data).toHaveLength(loaded);
    expect(out).toContain(`Dashboard: ${server!.base}/dashboard`);
    const browser = await fetch(`${server!.base}/`, {
      headers: { accept: 'text/html,application/xhtml+xml' },
      redirect: 'manual',
    });
    expect(browser.status).toBe(302);
    expect(browser.headers.get('location')).toBe('/dashboard');
    expect((await fetch(`${server!.base}/dashboard`)).status).toBe(200);
    const docs = await fetch(`${server!.base}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('"A first decision": the curl answers the decision the page shows', async () => {
    const [curl, answer] = blocksOf('A first decision');
    expect(curl!.lang).toBe('sh');
    expect(answer!.lang).toBe('json');
    const r = await sh(curl!.body);
    expect(r.code, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout) as Record<string, unknown>;
    const page = JSON.parse(answer!.body) as Record<string, unknown>;
    expect(Object.keys(got)).toEqual(Object.keys(page));
    for (const [field, value] of Object.entries(page))
      if (!VARYING.includes(field)) expect(got[field], field).toEqual(value);
    expect(got.id).toMatch(/^dec_\w+$/);
    expect(Date.parse(got.expires_at as string) - Date.parse(got.evaluated_at as string)).toBe(
      (page.ttl_seconds as number) * 1000,
    );
    expect(got.permit_token).toMatch(new RegExp(`^${(page.permit_token as string).replace('...', '')}`));
  });

  it('"A first decision": validate, test, explain, compile and push, each as its comment says', async () => {
    const block = blocksOf('A first decision').filter((b) => b.lang === 'sh')[1]!;
    const [validate, test, explain, compileAndPush, ...rest] = commands(block.body);
    expect(rest).toEqual([]);
    const v = await sh(validate!);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    expect(v.stdout).toMatch(/: 0 errors, 0 warnings$/m);
    const t = await sh(test!);
    expect(t.code, t.stdout + t.stderr).toBe(0);
    expect(t.stdout).toMatch(/^\d+ passed, 0 failed$/m);
    const e = await sh(explain!);
    expect(e.code, e.stdout + e.stderr).toBe(0);
    expect(e.stdout).toMatch(/^decision: allow \(policy\.matched\) by pol_support_refund_small_chat$/m);
    // The service already has the examples (the first start loaded them): the push changes nothing and asks nothing.
    const p = await sh(compileAndPush!);
    expect(p.code, p.stdout + p.stderr).toBe(0);
    expect(p.stdout).toMatch(/^wrote bundle\.json: \d+ policies, sha256:\w+$/m);
    expect(p.stdout).toContain(`policies: no change (bundle.json -> ${server!.base})`);
    expect(p.stdout).toMatch(/^pushed: \d+ policies, hash sha256:\w+$/m);
  });
});
