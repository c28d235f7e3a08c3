/**
 * `--help` as a new user types it: every `authz` subcommand (run as
 * `node bin/authz.js <command> --help`, the real bin) prints its usage on
 * stdout and exits 0, with nothing on stderr. `authz serve --help` lists every
 * environment variable the service reads, each with its default: the variables
 * are found in the runtime's sources here (`env.NAME`, `env['NAME']`,
 * `int(env, 'NAME', ...)`, `process.env.NAME`), so a variable added without
 * its line in the help fails this test. `authz mcp-proxy --help` (the MCP
 * proxy's own usage, clients/mcp-proxy/cli.ts) answers the same way.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { SERVE_VARIABLES } from '../../../runtime/cli/serve-help.js';
import { ensureBuilt, ROOT } from '../../helpers/server-process.js';

const run = promisify(execFile);

async function authz(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(ROOT, 'bin', 'authz.js'), ...args], { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** The .ts files under runtime/ that the service runs (not the other CLI commands' nor the dashboard's browser code). */
function serviceSources(dir = join(ROOT, 'runtime')): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const rel = relative(ROOT, path).split('\\').join('/');
    if (entry.isDirectory()) {
      if (rel !== 'runtime/dashboard') files.push(...serviceSources(path));
    } else if (
      entry.name.endsWith('.ts') &&
      !['runtime/cli/keys.ts', 'runtime/cli/push.ts', 'runtime/cli/http-client.ts'].includes(rel)
    ) {
      files.push(path);
    }
  }
  return files;
}

/** The environment variables a source reads (its comments left out: they quote other programs' variables). */
function variablesRead(source: string): string[] {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
  const found = new Set<string>();
  for (const re of [
    /\benv\.([A-Z][A-Z0-9_]+)/g,
    /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
    /\bint\(env, '([A-Z][A-Z0-9_]+)'/g,
  ]) {
    for (const m of text.matchAll(re)) found.add(m[1]!);
  }
  return [...found];
}

describe('authz <command> --help', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  const COMMANDS: Array<[string[], RegExp]> = [
    [['validate', '--help'], /^usage: authz validate PATH\.\.\./],
    [['compile', '--help'], /^usage: authz compile PATH\.\.\. -o FILE/],
    [['test', '-h'], /^usage: authz test PATH\.\.\./],
    [['explain', '--help'], /^usage: authz explain PATH\.\.\. --agent ID --action NS\.VERB/],
    [['diff', '--help'], /^usage: authz diff OLD NEW/],
    [['replay', '--help'], /^usage: authz replay BUNDLE/],
    [['serve', '--help'], /^usage: authz serve \[--bundle FILE\]/],
    [['keys', '--help'], /^usage:\n {2}authz keys create/],
    [['keys', 'create', '--help'], /^usage:\n {2}authz keys create/],
    [['push', '--help'], /^usage: authz push FILE/],
    [['mcp-proxy', '--help'], /^usage: authz mcp-proxy --config FILE/],
    [['mcp-proxy', '-h'], /^usage: authz mcp-proxy --config FILE/],
    [['--help'], /^usage: authz <command> \[options\]/],
  ];

  it.each(COMMANDS)('authz %j: the usage on stdout, exit 0', async (args, usage) => {
    const r = await authz(...args);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(usage);
    expect(r.stdout).toMatch(/exit codes?/i);
  });

  it('every command `authz --help` lists (keys: each subcommand) answers --help and -h with its usage, exit 0', async () => {
    const top = await authz('--help');
    // The command lines of the listing: two spaces, the command, a subcommand word (keys create), then its arguments.
    const listed = [
      ...new Set(
        top.stdout
          .split('\n')
          .map((l) => /^ {2}([a-z][a-z-]*)(?: ([a-z][a-z-]*)\b)?/.exec(l))
          .filter((m) => m !== null)
          .map((m) => [m[1], m[2]].filter(Boolean).join(' ')),
      ),
    ];
    expect(listed).toEqual([
      'validate',
      'compile',
      'test',
      'explain',
      'diff',
      'serve',
      'keys create',
      'keys revoke',
      'keys rotate',
      'push',
      'replay',
      'mcp-proxy',
    ]);
    for (const command of listed) {
      for (const flag of ['--help', '-h']) {
        const r = await authz(...command.split(' '), flag);
        const what = `authz ${command} ${flag}`;
        expect(r.code, what).toBe(0);
        expect(r.stderr, what).toBe('');
        expect(r.stdout, what).toMatch(/^usage:/);
        expect(r.stdout, what).toContain(`authz ${command} `);
        expect(r.stdout, what).toMatch(/exit codes?/i);
      }
    }
  }, 120_000);

  it('--help wins over other arguments, even missing or wrong ones (validate --strict --help)', async () => {
    const r = await authz('validate', '--strict', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: authz validate/);
    // After `--`, --help is a path like any other.
    const asPath = await authz('validate', '--', '--help');
    expect(asPath.code).toBe(2);
    // mcp-proxy: --help before the upstream command's `--` (no configuration needed); after it, the upstream's own argument.
    const proxy = await authz('mcp-proxy', '--config', 'missing.yaml', '--help');
    expect(proxy.code).toBe(0);
    expect(proxy.stdout).toMatch(/^usage: authz mcp-proxy/);
    const upstreams = await authz('mcp-proxy', '--', 'node', '--help');
    expect(upstreams.code).toBe(2);
    expect(upstreams.stdout).toBe('');
  });

  it('authz serve --help lists every environment variable the service reads, each with its default', async () => {
    const read = new Set(serviceSources().flatMap((f) => variablesRead(readFileSync(f, 'utf8'))));
    // The scan finds what it should (a sample of the kinds of reading).
    for (const name of [
      'PORT',
      'DATABASE_URL',
      'AUTHZ_ADMIN_TOKEN',
      'AUTHZ_MAX_POLICIES',
      'AUTHZ_SEED',
      'LOG_LEVEL',
      'OTEL_SERVICE_NAME',
    ])
      expect(read).toContain(name);
    const { stdout, code } = await authz('serve', '--help');
    expect(code).toBe(0);
    const listed = new Map(
      stdout
        .split('\n')
        .map((l) => /^ {2}([A-Z][A-Z0-9_]+) +(\S+) +\S/.exec(l))
        .filter((m) => m !== null)
        .map((m) => [m[1]!, m[2]!]),
    );
    const missing = [...read].filter((name) => !listed.has(name));
    expect(missing, 'variables read but not in `authz serve --help`').toEqual([]);
    expect(listed.get('PORT')).toBe('8080');
    expect(listed.get('HOST')).toBe('127.0.0.1');
    expect(listed.get('AUTHZ_DATA_DIR')).toBe('.authz');
    expect(listed.get('AUTHZ_SEED')).toBe('1');
    expect(listed.size).toBe(SERVE_VARIABLES.length);
  });
});
