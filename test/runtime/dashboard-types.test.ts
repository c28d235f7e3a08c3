/**
 * The dashboard's browser modules (plain JavaScript with JSDoc types) are
 * type-checked for real: `tsc -p runtime/dashboard/tsconfig.json` passes, covers
 * every module under runtime/dashboard/public, and fails on a type error, so
 * `npm test` catches one as `npm run typecheck` does.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const CONFIG = join(ROOT, 'runtime', 'dashboard', 'tsconfig.json');
const PUBLIC = join(ROOT, 'runtime', 'dashboard', 'public');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** Runs tsc with these arguments; its exit code and output. */
function tsc(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, ...args], { cwd: ROOT }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

const modules = readdirSync(PUBLIC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));

describe('dashboard type check', { timeout: 120_000 }, () => {
  it('passes tsc -p runtime/dashboard/tsconfig.json', async () => {
    const { code, output } = await tsc('-p', CONFIG);
    expect(output).toBe('');
    expect(code).toBe(0);
  });

  it('covers every module of the page, each marked // @ts-check', async () => {
    expect(modules).toEqual(
      expect.arrayContaining(['app.js', 'api.js', 'dom.js', 'router.js', join('views', 'agents.js')]),
    );
    const { code, output } = await tsc('-p', CONFIG, '--listFilesOnly');
    expect(code, output).toBe(0);
    const listed = output.split('\n').map((l) => l.trim());
    for (const file of modules) {
      expect(listed, file).toContain(join(PUBLIC, file).split('\\').join('/'));
      expect(readFileSync(join(PUBLIC, file), 'utf8').startsWith('// @ts-check\n'), file).toBe(true);
    }
  });

  it('fails on a type error in a module under that configuration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-types-'));
    try {
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: CONFIG, include: ['*.js'] }));
      writeFileSync(
        join(dir, 'broken.js'),
        '/** @param {string} id */\nexport const byId = (id) => document.getElementById(id);\nbyId(42);\n',
      );
      const { code, output } = await tsc('-p', join(dir, 'tsconfig.json'));
      expect(code).not.toBe(0);
      expect(output).toMatch(/broken\.js\(3,6\): error TS2345/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
