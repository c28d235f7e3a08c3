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

/**
 * Whether a path names a policy file: `.yaml` or `.yml`, but not a policy test
 * file (`*.test.yaml`, `*.test.yml`).
 *
 * @param path - a file path or name.
 * @returns true for a policy file.
 *
 * @example
 * ```ts
 * import { isPolicyFile } from 'agent-authz/compiler';
 *
 * console.log(isPolicyFile('policies.yaml'), isPolicyFile('support.test.yaml'), isPolicyFile('README.md')); // => true false false
 * ```
 */
export function isPolicyFile(path: string): boolean {
  return YAML_RE.test(path) && !TEST_RE.test(path);
}

/**
 * Every YAML file (`.yaml`, `.yml`) under the paths, as absolute paths, sorted,
 * each once. Folders are walked recursively (hidden entries and node_modules
 * skipped); a file given directly is taken whatever its name.
 *
 * @param paths - files and folders, absolute or relative to `cwd`.
 * @param cwd - the folder relative paths start from.
 * @returns the absolute paths.
 * @throws Error (the CLI's usage error, exit code 2) when a path does not exist.
 *
 * @example
 * ```ts
 * import { findYamlFiles, isPolicyFile, readSource } from 'agent-authz/compiler';
 *
 * const cwd = process.cwd();
 * const files = findYamlFiles(['examples/support'], cwd).filter(isPolicyFile);
 * console.log(files.map((f) => readSource(f, cwd).file).join(' ')); // => examples/support/goodwill-credits.yaml examples/support/policies.yaml
 * ```
 */
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

/**
 * Reads a file (UTF-8) as a SourceFile for {@link compileSources}, named
 * relative to `cwd` (as diagnostics print it) when it lies under `cwd`, else by
 * its absolute path.
 *
 * @param absPath - the file's absolute path.
 * @param cwd - the folder names are made relative to.
 * @returns `{ file, text }`.
 * @throws the file system's error (ENOENT, EACCES...) when the file cannot be read.
 *
 * @example
 * ```ts
 * import { resolve } from 'node:path';
 * import { compileSources, readSource } from 'agent-authz/compiler';
 *
 * const source = readSource(resolve('examples/purchasing/policies.yaml'), process.cwd());
 * console.log(source.file, compileSources([source]).diagnostics.length); // => examples/purchasing/policies.yaml 0
 * ```
 */
export function readSource(absPath: string, cwd: string): SourceFile {
  const rel = relative(cwd, absPath);
  return { file: rel.startsWith('..') || rel === '' ? absPath : rel, text: readFileSync(absPath, 'utf8') };
}
