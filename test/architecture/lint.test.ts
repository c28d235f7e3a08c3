/**
 * The tree is linted and formatted: `eslint .` (eslint.config.js: typescript-eslint's
 * recommended rules) reports nothing, and `prettier --check .` (.prettierrc.json,
 * .prettierignore) finds every file formatted. Both run as the commands a
 * contributor runs, from the repository root, with the installed binaries.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/docs-error-codes.js';

interface Run {
  code: number;
  output: string;
}

/** Runs a binary of node_modules/.bin in the repository root; its exit code and output. */
function run(bin: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      join(REPO_ROOT, 'node_modules', '.bin', bin),
      args,
      { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe('lint and format', () => {
  it('eslint . reports nothing', { timeout: 300_000 }, async () => {
    const { code, output } = await run('eslint', [
      '.',
      '--max-warnings',
      '0',
      '--cache',
      '--cache-location',
      'node_modules/.cache/eslint/',
    ]);
    expect(output.trim(), output).toBe('');
    expect(code).toBe(0);
  });

  it('prettier --check . finds every file formatted', { timeout: 300_000 }, async () => {
    const { code, output } = await run('prettier', ['--check', '.', '--log-level', 'warn']);
    expect(output.trim(), output).toBe('');
    expect(code).toBe(0);
  });
});
