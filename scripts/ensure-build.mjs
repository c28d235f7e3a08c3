#!/usr/bin/env node
/**
 * `npm start`'s prestart: builds dist/ only when it is stale. `npm ci` already
 * built it (the prepare script), so a fresh clone starts without compiling.
 *
 * Stale: a TypeScript source of tsconfig.build.json's `include` (no .d.ts, no
 * .test.ts) has no output in dist/, or is newer than its output, or
 * tsconfig*.json is newer than an output. Then it runs this checkout's tsc
 * (node_modules/typescript/bin/tsc -p tsconfig.build.json) and says why;
 * otherwise it prints nothing and spawns nothing. Plain JavaScript: it runs
 * before anything is compiled.
 *
 *   node scripts/ensure-build.mjs   # exit 0 when dist/ is fresh or was rebuilt
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DEFAULT_INCLUDE = [
  'clients',
  'compiler',
  'runtime',
  'permit-verifier',
  'webhook-receiver',
  'bench',
  'scripts',
  'examples',
];
const SKIP_DIRS = new Set(['node_modules', 'dist', 'test']);

/** The first source (relative path) whose build output is missing or older; null when dist/ is fresh. */
export function staleSource(root) {
  const config = join(root, 'tsconfig.build.json');
  if (!existsSync(config)) return null; // an installed package: nothing to build
  let include = DEFAULT_INCLUDE;
  try {
    const parsed = JSON.parse(readFileSync(config, 'utf8'));
    if (Array.isArray(parsed.include))
      include = parsed.include.filter((x) => typeof x === 'string' && !x.includes('*'));
  } catch {
    // Not plain JSON: the default list.
  }
  const configTime = Math.max(...['tsconfig.json', 'tsconfig.build.json'].map((f) => mtime(join(root, f)) ?? 0));
  for (const top of include) {
    const found = walk(root, join(root, top), configTime);
    if (found) return found;
  }
  return null;
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

function walk(root, path, configTime) {
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return null;
  }
  for (const entry of entries) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) {
      if (SKIP_DIRS.has(entry.name)) continue;
      const found = walk(root, full, configTime);
      if (found) return found;
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.test.ts')) {
      const rel = relative(root, full);
      const built = mtime(join(root, 'dist', rel.replace(/\.ts$/, '.js')));
      if (built === null || built < Math.max(statSync(full).mtimeMs, configTime)) return rel;
    }
  }
  return null;
}

function main() {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const stale = staleSource(root);
  if (stale === null) return 0;
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    process.stderr.write(
      `dist/ is out of date (${stale}) and TypeScript is not installed: run npm ci, then npm run build\n`,
    );
    return 1;
  }
  process.stderr.write(`dist/ is out of date (${stale} changed): building ...\n`);
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  return run.status ?? 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main();
