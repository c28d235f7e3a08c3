/**
 * Owner-only files: the embedded store's data directory is 0700 and nothing in
 * it is readable or writable by group or others. PGlite copies its initial
 * cluster with the template's modes (0666) and PostgreSQL writes some files
 * 0644, whatever the process umask, so the tree is tightened after it is
 * written: when the store opens and when it closes.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Creates `dir` (and missing parents) owner-only, or makes an existing one 0700.
 *
 *   ensurePrivateDir('/srv/authz/.authz'); // drwx------
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const mode = lstatSync(dir).mode & 0o777;
  if (mode !== 0o700) chmodSync(dir, 0o700);
}

/**
 * Removes the group and other bits of every directory and file under `dir`
 * (symbolic links are left alone, never followed). Returns how many it changed.
 *
 *   restrictTree('/srv/authz/.authz'); // 968 on a store PGlite just created
 */
export function restrictTree(dir: string): number {
  let changed = 0;
  const visit = (path: string): void => {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      return; // removed meanwhile (PostgreSQL recycles WAL segments)
    }
    if (stat.isSymbolicLink()) return;
    if ((stat.mode & 0o077) !== 0) {
      try {
        chmodSync(path, stat.mode & 0o700);
        changed++;
      } catch {
        // removed meanwhile
      }
    }
    if (!stat.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) visit(join(path, name));
  };
  visit(dir);
  return changed;
}
