/** Finding policy files and policy test files under the paths given on the command line. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, isAbsolute } from 'node:path';
import type { SourceFile } from '../policy/source.js';
import { UsageError } from './io.js';

const YAML_RE = /\.ya?ml$/i;
const TEST_RE = /\.test\.ya?ml$/i;

export function isTestFile(path: string): boolean {
  return TEST_RE.test(path);
}

export function isPolicyFile(path: string): boolean {
  return YAML_RE.test(path) && !TEST_RE.test(path);
}

/** Every YAML file under the paths (a file given directly is taken as it is), sorted, each once. */
export function findYamlFiles(paths: readonly string[], cwd: string): string[] {
  const found = new Set<string>();
  for (const path of paths) {
    const abs = isAbsolute(path) ? path : resolve(cwd, path);
    let stat;
    try {
      stat = statSync(abs);
    } catch {
      throw new UsageError(`no such file or directory: ${path}`);
    }
    if (stat.isDirectory()) walk(abs, found);
    else found.add(abs);
  }
  return [...found].sort();
}

function walk(dir: string, found: Set<string>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, found);
    else if (entry.isFile() && YAML_RE.test(entry.name)) found.add(path);
  }
}

/** A file as a SourceFile named relative to cwd (as diagnostics print it). */
export function readSource(absPath: string, cwd: string): SourceFile {
  const rel = relative(cwd, absPath);
  return { file: rel.startsWith('..') || rel === '' ? absPath : rel, text: readFileSync(absPath, 'utf8') };
}
