/**
 * runtime/store/driver-patch.ts: the driver this checkout loads carries the
 * patch (patch-package ran at install), and a connection.js without it is told
 * apart (the unpatched 3.4.9 text, rebuilt here by undoing the patch); and
 * `authz serve` on PostgreSQL warns at start with an unpatched driver (an
 * install with --ignore-scripts, staged here: this build with a copy of
 * postgres.js from which `git apply -R` took the patch out) and not with the
 * patched one.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driverConnectionFile, driverPatched, PATCH_MARKER } from '../../../runtime/store/driver-patch.js';
import { createTestDatabase } from '../../helpers/postgres.js';
import {
  ensureBuilt,
  freePort,
  ROOT,
  startServeProcess,
  stopServer,
  type ServeProcess,
} from '../../helpers/server-process.js';

const run = promisify(execFile);
const WARNING =
  /authz serve: warning: postgres\.js at (\S+) lacks patches\/postgres\+3\.4\.9\.patch .*run `npx patch-package`/;

/**
 * A copy of this build (package.json, bin, dist; data folders linked) whose
 * node_modules links every package of this checkout but postgres, which is a
 * copy with patches/postgres+3.4.9.patch undone. Returns its bin/authz.js.
 */
async function unpatchedInstall(dir: string): Promise<string> {
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  for (const d of ['bin', 'dist']) cpSync(join(ROOT, d), join(dir, d), { recursive: true });
  for (const d of ['runtime', 'schemas', 'examples']) symlinkSync(join(ROOT, d), join(dir, d));
  mkdirSync(join(dir, 'node_modules'));
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name === 'postgres' || name.startsWith('.')) continue;
    symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  }
  cpSync(join(ROOT, 'node_modules', 'postgres'), join(dir, 'node_modules', 'postgres'), {
    recursive: true,
    dereference: true,
  });
  await run('git', ['apply', '-R', '-p1', join(ROOT, 'patches', 'postgres+3.4.9.patch')], { cwd: dir });
  return join(dir, 'bin', 'authz.js');
}

describe('the patched postgres.js', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authz-driver-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the loaded driver (ESM build) is node_modules/postgres/src/connection.js, patched', () => {
    expect(driverConnectionFile()).toBe(join(ROOT, 'node_modules', 'postgres', 'src', 'connection.js'));
    expect(driverPatched()).toBe(true);
  });

  it('a connection.js without the patch, or none at all, is not patched', () => {
    // Undo the patch's added lines for nextWrite: what an install with --ignore-scripts leaves.
    const patched = readFileSync(driverConnectionFile(), 'utf8');
    const unpatched = patched
      .split('\n')
      .filter((line) => !line.includes(PATCH_MARKER))
      .join('\n');
    const file = join(dir, 'connection.js');
    writeFileSync(file, unpatched);
    expect(driverPatched(file)).toBe(false);
    expect(driverPatched(join(dir, 'missing.js'))).toBe(false);
  });
});

describe('authz serve and the driver patch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authz-unpatched-'));
  const started: ServeProcess[] = [];
  const dbs: Array<Awaited<ReturnType<typeof createTestDatabase>>> = [];
  beforeAll(() => {
    ensureBuilt();
  });
  afterAll(async () => {
    await Promise.all(started.map((p) => stopServer(p)));
    await Promise.all(dbs.map((db) => db.drop()));
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /**
   * Starts `authz serve` on a database of its own (each install has its own
   * master key file, which seals the signing keys it creates), stops it once
   * it listens; its whole stderr.
   */
  const stderrOfServe = async (bin?: string): Promise<string> => {
    const db = await createTestDatabase();
    dbs.push(db);
    const p = await startServeProcess(
      await freePort(),
      { DATABASE_URL: db.url, AUTHZ_ADMIN_TOKEN: 'admin-token-for-driver-patch-0123456789' },
      30_000,
      bin,
    );
    started.push(p);
    await stopServer(p);
    return p.stderr.join('');
  };

  it('warns at start, naming the driver file and `npx patch-package`, when postgres.js lacks the patch (and still serves)', async () => {
    const bin = await unpatchedInstall(dir);
    const connection = join(dir, 'node_modules', 'postgres', 'src', 'connection.js');
    expect(driverPatched(connection), 'the staged driver is the unpatched 3.4.9').toBe(false);
    const stderr = await stderrOfServe(bin);
    expect(stderr).toMatch(WARNING);
    expect(stderr.match(WARNING)![1]).toBe(connection);
  }, 120_000);

  it('says nothing of the kind with the patched driver of this checkout', async () => {
    const stderr = await stderrOfServe();
    expect(stderr).not.toMatch(/lacks patches/);
  }, 60_000);
});
