/**
 * The Python client type-checks: pyright (from npm, so no PyPI is needed) in
 * strict mode over clients/python/agent_authz, with the settings of
 * clients/python/pyproject.toml ([tool.pyright]). A wrong type in the package
 * fails npm test; the second case proves the checker sees the package by
 * checking a copy with one planted error.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PYRIGHT = join(ROOT, 'node_modules', 'pyright', 'index.js');
const run = promisify(execFile);

interface Report {
  summary: { filesAnalyzed: number; errorCount: number };
  generalDiagnostics: Array<{ file: string; severity: string; message: string; range: { start: { line: number } } }>;
}

/** Pyright's JSON report for the project in `dir` (it exits 1 when it finds errors: the report is read either way). */
async function check(dir: string): Promise<Report> {
  const out = await run(process.execPath, [PYRIGHT, '--outputjson', '-p', dir], {
    cwd: dir,
    maxBuffer: 16 << 20,
  }).catch((err: { stdout?: string }) => ({
    stdout: err.stdout ?? '',
  }));
  return JSON.parse(out.stdout) as Report;
}

const temp: string[] = [];
afterAll(() => temp.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('the Python client type-checks (pyright, strict)', () => {
  it('has no type errors', async () => {
    const report = await check(join(ROOT, 'clients', 'python'));
    const errors = report.generalDiagnostics
      .filter((d) => d.severity === 'error')
      .map((d) => `${d.file}:${d.range.start.line + 1} ${d.message}`);
    expect(errors).toEqual([]);
    expect(report.summary.filesAnalyzed).toBeGreaterThanOrEqual(10);
  }, 120_000);

  it('finds a planted error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pyright-'));
    temp.push(dir);
    cpSync(join(ROOT, 'clients', 'python'), dir, { recursive: true });
    const file = join(dir, 'agent_authz', '_version.py');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\nplanted: int = "not a number"\n`);
    const report = await check(dir);
    expect(report.generalDiagnostics.some((d) => d.severity === 'error' && d.file.endsWith('_version.py'))).toBe(true);
  }, 120_000);
});
