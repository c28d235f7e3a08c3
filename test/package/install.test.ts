/**
 * The npm package as a user gets it: `npm pack` of the sources, installed from
 * the tarball into an empty directory (dependencies from the npm cache or the
 * registry), then `npx authz validate`, `npx authz serve` with one decision,
 * and a script importing agent-authz/client, /verifier and /webhooks that uses
 * them against that server.
 *
 * The sources are copied and built in a staging folder (not in this checkout's
 * dist/, which other tests may be reading), then packed there with npm's own
 * `files` rules. Slow: one pack and one install per run, shared by the tests.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachLine, freePort, HOST, ROOT } from '../helpers/server-process.js';

const run = promisify(execFile);
const MINUTES = 60_000;

/** What `tsc -p tsconfig.build.json` and the package's `files` read. */
const SOURCES = [
  'package.json',
  'README.md',
  'tsconfig.json',
  'tsconfig.build.json',
  'bin',
  'schemas',
  'examples',
  'runtime',
  'compiler',
  'clients',
  'permit-verifier',
  'webhook-receiver',
  'bench',
  'scripts',
];

/** The environment of a child npm: none of the calling npm's settings (npm test sets npm_config_*), no store or test settings. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('npm_') || k.startsWith('AUTHZ_') || k === 'DATABASE_URL' || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', ...extra };
}

async function sh(
  file: string,
  args: string[],
  cwd: string,
  env = cleanEnv(),
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    throw new Error(
      `${file} ${args.join(' ')} (in ${cwd}) failed with ${err.code}:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`,
    );
  }
}

/** Copies the sources, builds them, packs them: the tarball's path. */
async function packSources(work: string): Promise<string> {
  const stage = join(work, 'stage');
  mkdirSync(stage);
  for (const entry of SOURCES) {
    cpSync(join(ROOT, entry), join(stage, entry), {
      recursive: true,
      filter: (src) => !/[\\/](node_modules|dist)([\\/]|$)/.test(src.slice(ROOT.length)),
    });
  }
  // tsc resolves its types and the dependencies' declarations here.
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(stage, 'node_modules'), 'dir');
  await sh(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    stage,
  );
  const { stdout } = await sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], stage);
  const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  return join(work, basename(packed!.filename));
}

interface Served {
  child: ChildProcess;
  base: string;
  testKey: string;
  accountId: string;
  exited: Promise<number | null>;
  output: string[];
}

/** `npx authz serve` in the installed project; resolves once /healthz answers and the test key was printed. */
async function serve(app: string, dataDir: string): Promise<Served> {
  const port = await freePort();
  const base = `http://${HOST}:${port}`;
  // Its own process group: npx runs the bin in a child of its own, and the group is stopped as one.
  const child = spawn('npx', ['authz', 'serve'], {
    cwd: app,
    env: cleanEnv({ PORT: String(port), HOST, AUTHZ_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output: string[] = [];
  let testKey = '';
  let accountId = '';
  eachLine(child.stdout!, (line) => {
    output.push(line);
    testKey ||= /test key: (svc_test_sk_\w+)/.exec(line)?.[1] ?? '';
    accountId ||= /Created account "default" \((acc_\w+)\)/.exec(line)?.[1] ?? '';
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  let done = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => ((done = true), resolve(code))));
  for (;;) {
    if (done) throw new Error(`authz serve exited before answering /healthz:\n${output.join('\n')}`);
    const healthy = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy && testKey && accountId) return { child, base, testKey, accountId, exited, output };
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the npm package, installed from its tarball', () => {
  let work: string;
  let app: string;
  let tarball: string;
  let server: Served | undefined;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'authz-package-'));
    tarball = await packSources(work);
    app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'empty-project', private: true, type: 'module' }));
    // Dependencies from the local cache when it has them, else from the registry.
    await sh('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], app);
  }, 15 * MINUTES);

  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      process.kill(-server.child.pid!, 'SIGKILL');
      await server.exited;
    }
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds what runs and nothing of the checkout besides', () => {
    const root = join(app, 'node_modules', 'agent-authz');
    for (const file of [
      'bin/authz.js',
      'dist/runtime/serve.js',
      'dist/compiler/index.js',
      'dist/clients/typescript/index.js',
      'dist/clients/typescript/index.d.ts',
      'dist/permit-verifier/index.js',
      'dist/webhook-receiver/index.js',
      'schemas/policy.schema.json',
      'schemas/api/decision-request.schema.json',
      'runtime/store/migrations/001_init.sql',
      'runtime/store/functions/authz_apply_limits.sql',
      'runtime/dashboard/public/index.html',
      'examples/support/policies.yaml',
    ]) {
      expect(existsSync(join(root, file)), file).toBe(true);
    }
    for (const absent of [
      'test',
      'bench',
      'dist/bench',
      'dist/scripts',
      'clients/python',
      'runtime/domain',
      'dist/runtime/serve.js.map',
    ]) {
      expect(existsSync(join(root, absent)), absent).toBe(false);
    }
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name).toBe('agent-authz');
    // The driver comes bundled, with patches/postgres+3.4.9.patch applied (docs/operations.md, The patched driver).
    for (const build of ['src', 'cjs/src']) {
      expect(readFileSync(join(root, 'node_modules', 'postgres', build, 'connection.js'), 'utf8'), build).toContain(
        'porsager/postgres#1154, #1208',
      );
    }
  });

  it('runs `npx authz validate` on the shipped examples (exit 0) and fails on a bad policy (exit 1)', async () => {
    const { stdout } = await sh('npx', ['authz', 'validate', 'node_modules/agent-authz/examples'], app);
    expect(stdout).toMatch(/0 errors/);
    const bad = join(work, 'bad-policies');
    mkdirSync(bad);
    writeFileSync(join(bad, 'p.yaml'), 'id: pol_bad\nname: bad\neffect: maybe\nactions: ["orders.read"]\n');
    const failed = await run('npx', ['authz', 'validate', bad], { cwd: app, env: cleanEnv() }).then(
      () => 0,
      (e: { code?: number }) => e.code,
    );
    expect(failed).toBe(1);
  });

  it('runs `npx authz serve` on a fresh data dir: the printed key decides; the three entry points import and work against it', async () => {
    server = await serve(app, join(work, 'data'));
    const { base, testKey, accountId } = server;
    const r = await fetch(`${base}/v1/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: 'support-bot-1', action: 'orders.read', resource: 'order:1001' }),
    });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ object: 'decision', effect: 'allow', reason: 'policy.matched' });

    // A script of the installed project: the client decides, the verifier checks the permit, the webhooks helpers sign and verify.
    writeFileSync(
      join(app, 'use.js'),
      `import { AuthzClient } from 'agent-authz/client';
import { createPermitVerifier } from 'agent-authz/verifier';
import { signWebhookBody, verifyWebhookSignature } from 'agent-authz/webhooks';

const [base, apiKey, account] = process.argv.slice(2);
const authz = new AuthzClient({ baseUrl: base, apiKey });
const decision = await authz.decide({ agent_id: 'support-bot-1', action: 'orders.read', resource: 'order:1001' });
const verifier = createPermitVerifier({ jwksUrl: base + '/.well-known/jwks.json', issuer: base, account, environment: 'test' });
const claims = await verifier.verify(decision.permit_token, { action: 'orders.read', resource: 'order:1001' });
await authz.confirm(decision.id);
const signature = signWebhookBody('{"id":"evt_1"}', 'whsec_test');
console.log(JSON.stringify({ effect: decision.effect, dec: claims.dec, status: (await authz.get(decision.id)).status,
  signed: verifyWebhookSignature('{"id":"evt_1"}', signature, 'whsec_test'), forged: verifyWebhookSignature('{"id":"evt_2"}', signature, 'whsec_test') }));
`,
    );
    const { stdout } = await sh(process.execPath, ['use.js', base, testKey, accountId], app);
    const used = JSON.parse(stdout.trim()) as Record<string, unknown>;
    expect(used).toEqual({
      effect: 'allow',
      dec: expect.stringMatching(/^dec_/),
      status: 'confirmed',
      signed: true,
      forged: false,
    });

    process.kill(-server.child.pid!, 'SIGTERM');
    await server.exited;
    // Stopped: nothing answers on its port any more.
    expect(
      await fetch(`${base}/healthz`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused');
  });
});
