/**
 * A build of another commit of this repository, for tests that run an older
 * `authz` against a store and then the current one on the same store (upgrade
 * in place). Same idea as bench/compare/run.ts, but cached across runs.
 *
 * `oldBuild(ref)` resolves `ref` to its full commit hash and returns
 * `<tmpdir>/authz-old-build-<hash>-<checkout>`: a detached `git worktree` of that commit
 * with its `dist/` built by tsc (`<dir>/bin/authz.js` runs that build). Its
 * node_modules is a symlink to this checkout's, which requires the commit's
 * package-lock.json to be this checkout's (else it throws: installing another
 * set of packages is not a test's business). `<checkout>` is a short hash of
 * this checkout's path: a build linked to another checkout's node_modules (a
 * worktree since removed, a second clone) is never reused.
 *
 * Caching: the worktree is LEFT in the temporary directory (and registered in
 * `git worktree list`) so that later runs reuse its build; a commit is
 * immutable, so a directory whose dist/ exists is complete (the build is made
 * under another name and moved into place only when it succeeded). Remove it
 * with `git worktree remove --force <dir>`; if the temporary directory is
 * cleaned instead, `git worktree prune` (run here before each new build)
 * forgets the registration.
 *
 * It throws, never skips, when the repository has no history of `ref` (a
 * shallow clone): the upgrade test needs it.
 *
 * @example
 * const dir = oldBuild(OLD_MAIN); // '/tmp/authz-old-build-f282b88...-3c9a1e0b'
 * await startServeProcess(port, env, 30_000, join(dir, 'bin', 'authz.js'));
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './server-process.js';

const git = (args: string[]): string =>
  execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The full hash of `ref`; throws with what to do when the history does not have it. */
export function commitOf(ref: string): string {
  try {
    return git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch (error) {
    const shallow = (() => {
      try {
        return git(['rev-parse', '--is-shallow-repository']) === 'true';
      } catch {
        return null;
      }
    })();
    const why =
      shallow === null
        ? `${ROOT} is not a git repository`
        : shallow
          ? 'this clone is shallow'
          : `no commit ${ref} in this repository`;
    throw new Error(
      `oldBuild(${ref}): ${why}; the upgrade test builds that commit: clone with full history (git fetch --unshallow, or fetch-depth: 0 in CI). ${(error as Error).message}`,
    );
  }
}

/** The directory of a build of `ref` (see the module comment); builds it the first time (tsc, a minute or two). */
export function oldBuild(ref: string): string {
  const commit = commitOf(ref);
  const checkout = createHash('sha256').update(realpathSync(ROOT)).digest('hex').slice(0, 8);
  const dir = join(tmpdir(), `authz-old-build-${commit}-${checkout}`);
  const built = (d: string) =>
    existsSync(join(d, 'dist', 'runtime', 'serve.js')) &&
    existsSync(join(d, 'bin', 'authz.js')) &&
    existsSync(join(d, 'node_modules', 'fastify'));
  if (built(dir)) return dir;

  // Every package the commit installs is installed here at the same version: ours serve
  // (packages added since do no harm). Checked before anything is made.
  const missing = packagesMissingHere(JSON.parse(git(['show', `${commit}:package-lock.json`])) as Lock);
  if (missing.length > 0) {
    throw new Error(
      `oldBuild(${ref}): this checkout's node_modules cannot run it, its package-lock.json has packages this one lacks or has at another version (${missing.slice(0, 5).join(', ')}); pick another commit (or extend test/helpers/old-build.ts)`,
    );
  }
  // Registrations of worktrees whose directories are gone (a cleaned tmp, an interrupted build).
  git(['worktree', 'prune']);
  if (existsSync(dir)) {
    // A worktree without its build: an interrupted run. Start again.
    try {
      git(['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(['worktree', 'prune']);
    }
  }
  const building = `${dir}.building-${process.pid}`;
  git(['worktree', 'add', '--detach', building, commit]);
  try {
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(building, 'node_modules'));
    try {
      execFileSync(
        process.execPath,
        [join(building, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
        { cwd: building, stdio: 'pipe' },
      );
    } catch (error) {
      // tsc emits even with type errors; only a missing output is fatal.
      if (!built(building)) {
        const out = error as { stdout?: Buffer; message: string };
        throw new Error(`oldBuild(${ref}): tsc failed in ${building}: ${out.stdout?.toString() || out.message}`);
      }
    }
    if (!built(building)) throw new Error(`oldBuild(${ref}): no dist/runtime/serve.js after tsc in ${building}`);
    if (built(dir)) {
      // Another process finished the same build first.
      git(['worktree', 'remove', '--force', building]);
      return dir;
    }
    git(['worktree', 'move', building, dir]);
    return dir;
  } catch (error) {
    try {
      git(['worktree', 'remove', '--force', building]);
    } catch {
      rmSync(building, { recursive: true, force: true });
      git(['worktree', 'prune']);
    }
    throw error;
  }
}

type Lock = { packages?: Record<string, { version?: string }> };

/** `path@version` of each package in `lock` that this checkout's lock file lacks at that version. */
function packagesMissingHere(lock: Lock): string[] {
  const here = (JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as Lock).packages ?? {};
  return Object.entries(lock.packages ?? {})
    .filter(([path, entry]) => path !== '' && here[path]?.version !== entry.version)
    .map(([path, entry]) => `${path}@${entry.version}`);
}
