/**
 * Whether the postgres.js that this process loads carries the project's patch
 * (patches/postgres+3.4.9.patch, applied by patch-package at install; see
 * docs/operations.md, "The patched driver"). An install with
 * `--ignore-scripts` skips it, and the unpatched driver can end the process
 * when a database connection drops, so `authz serve` warns at start.
 *
 * @example
 * if (!driverPatched()) console.warn('postgres.js is not patched: run npx patch-package');
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A line the patch adds to connection.js (the nextWrite guard). */
export const PATCH_MARKER = 'porsager/postgres#1154, #1208';

/** The connection.js next to the driver's ESM entry point (what `import postgres from 'postgres'` loads). */
export function driverConnectionFile(): string {
  return fileURLToPath(new URL('./connection.js', import.meta.resolve('postgres')));
}

/** True when `file` (default: the loaded driver's connection.js) carries the patch; false when it does not or cannot be read. */
export function driverPatched(file: string = driverConnectionFile()): boolean {
  try {
    return readFileSync(file, 'utf8').includes(PATCH_MARKER);
  } catch {
    return false;
  }
}
