/**
 * `npm start` builds only when dist/ is stale (scripts/ensure-build.mjs, the
 * prestart): on a checkout whose dist/ is up to date it spawns no tsc; a source
 * newer than its output, a missing output or a newer tsconfig makes it build.
 * Checked on a small fixture checkout with a stand-in tsc that records each run,
 * and on this checkout with the real `npm start` (dist/ untouched, and the
 * embedded store's start-up lines printed).
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachLine, ensureBuilt, freePort, HOST, ROOT, SERVE_JS } from '../helpers/server-process.js';

const FAKE_TSC = `#!/usr/bin/env node
import { appendFileSync } from 'node:fs';
appendFileSync(new URL('../../../tsc-runs', import.meta.url), process.argv.slice(2).join(' ') + '\\n');
`;

describe('scripts/ensure-build.mjs on a fixture checkout', () => {
  let root: string;
  const t = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
  const file = (rel: string, text: string, at: Date) => {
    const path = join(root, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    utimesSync(path, at, at);
  };
  const touch = (rel: string, at: Date) => utimesSync(join(root, rel), at, at);
  const run = () => {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'ensure-build.mjs')], { cwd: root, encoding: 'utf8' });
    return {
      status: r.status,
      stdout: r.stdout,
      stderr: r.stderr,
      tscRuns: existsSync(join(root, 'tsc-runs'))
        ? readFileSync(join(root, 'tsc-runs'), 'utf8').trim().split('\n')
        : [],
    };
  };

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'authz-ensure-build-'));
    mkdirSync(join(root, 'scripts'));
    copyFileSync(join(ROOT, 'scripts', 'ensure-build.mjs'), join(root, 'scripts', 'ensure-build.mjs'));
    file('package.json', '{ "type": "module" }', t(0));
    file('node_modules/typescript/package.json', '{ "type": "module" }', t(0));
    file('node_modules/typescript/bin/tsc', FAKE_TSC, t(0));
    file('tsconfig.json', '{}', t(0));
    file('tsconfig.build.json', '{ "extends": "./tsconfig.json", "include": ["runtime", "compiler"] }', t(0));
    file('runtime/a.ts', 'export const a = 1;', t(10));
    file('runtime/sub/b.ts', 'export const b = 1;', t(10));
    file('runtime/types.d.ts', 'export {};', t(50)); // no output of its own
    file('runtime/a.test.ts', '', t(50)); // excluded
    file('compiler/c.ts', 'export const c = 1;', t(10));
    for (const out of ['dist/runtime/a.js', 'dist/runtime/sub/b.js', 'dist/compiler/c.js']) file(out, '', t(20));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('with every output newer than its source: exit 0, silent, no tsc', () => {
    expect(run()).toEqual({ status: 0, stdout: '', stderr: '', tscRuns: [] });
  });

  it('builds when a source is newer than its output, an output is missing, or a tsconfig changed', () => {
    touch('runtime/sub/b.ts', t(30));
    let r = run();
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('runtime/sub/b.ts changed');
    expect(r.tscRuns).toEqual(['-p tsconfig.build.json']);

    touch('runtime/sub/b.ts', t(10));
    unlinkSync(join(root, 'dist/compiler/c.js'));
    r = run();
    expect(r.stderr).toContain('compiler/c.ts');
    expect(r.tscRuns).toHaveLength(2);
    file('dist/compiler/c.js', '', t(20));

    touch('tsconfig.json', t(40));
    r = run();
    expect(r.stderr).toContain('out of date');
    expect(r.tscRuns).toHaveLength(3);
    touch('tsconfig.json', t(0));

    expect(run()).toEqual({
      status: 0,
      stdout: '',
      stderr: '',
      tscRuns: ['-p tsconfig.build.json', '-p tsconfig.build.json', '-p tsconfig.build.json'],
    });
  });
});

describe('npm start on this checkout with dist/ up to date', () => {
  let tmp: string;
  beforeAll(() => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'authz-npm-start-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('compiles nothing and says what the embedded store does while it opens', { timeout: 180_000 }, async () => {
    const check = spawnSync(process.execPath, [join(ROOT, 'scripts', 'ensure-build.mjs')], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
    const builtAt = statSync(SERVE_JS).mtimeMs;

    const port = await freePort();
    const dataDir = join(tmp, 'data');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST,
      AUTHZ_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    };
    for (const name of [
      'DATABASE_URL',
      'AUTHZ_MASTER_KEY',
      'AUTHZ_MASTER_KEY_FILE',
      'AUTHZ_ADMIN_TOKEN',
      'AUTHZ_TEST_CLOCK',
    ])
      delete env[name];
    // Its own process group, so the stop reaches npm's child too.
    const child = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const lines: string[] = [];
    let stderr = '';
    eachLine(child.stdout!, (line) => lines.push(line));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect
        .poll(() => lines.some((l) => l.includes(`listening on http://${HOST}:${port}`)), {
          timeout: 150_000,
          interval: 100,
        })
        .toBe(true);
      const creating = lines.indexOf(`Creating the embedded store in ${dataDir} (first start) ...`);
      expect(creating, lines.join('\n')).toBeGreaterThanOrEqual(0);
      expect(lines.slice(creating + 1).some((l) => /^Embedded store ready in \d+\.\d s\.$/.test(l))).toBe(true);
      expect(stderr).not.toContain('out of date');
      expect(statSync(SERVE_JS).mtimeMs).toBe(builtAt); // no build ran
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  });
});
