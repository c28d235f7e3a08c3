import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { main } from '../../../compiler/cli/main.js';

export const repoRoot = join(import.meta.dirname, '..', '..', '..');

/** Runs the CLI in-process and captures what it prints. */
export function runCli(args: string[], cwd = repoRoot, isTTY = false): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = main(args, {
    out: (t) => void (out += t.endsWith('\n') ? t : `${t}\n`),
    err: (t) => void (err += t.endsWith('\n') ? t : `${t}\n`),
    isTTY,
    cwd,
  });
  return { code, out, err };
}

/** A temporary directory with the given files (path -> content). */
export function tempTree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'authz-cli-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}
