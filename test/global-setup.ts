/**
 * Vitest global setup: provides a PostgreSQL admin URL (`inject('pgAdminUrl')`)
 * to the storage tests, once per `vitest run`.
 *
 * - `DATABASE_URL` set → that server is used as is (it must allow CREATE DATABASE).
 * - otherwise a throwaway cluster is created: `initdb`/`pg_ctl` from PATH or
 *   `/usr/lib/postgresql/<newest>/bin`; as root they run as the `postgres` user
 *   (`runuser`), created when missing. The cluster lives in a temp dir under
 *   /tmp, listens on 127.0.0.1 on a free port with durability turned off, and is
 *   stopped (`-m immediate`) and deleted in teardown.
 *
 * When no PostgreSQL can be found or started the run goes on: `pgAdminUrl` is ''
 * and `pgSetupError` says why, and only the tests that need PostgreSQL fail
 * (test/helpers/postgres.ts throws that reason).
 */
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the test PostgreSQL server ('' when there is none). */
    pgAdminUrl: string;
    /** Why there is no PostgreSQL server ('' when there is one). */
    pgSetupError: string;
  }
}

const run = promisify(execFile);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide('pgAdminUrl', external);
    project.provide('pgSetupError', '');
    return async () => {};
  }
  let cluster: Cluster | undefined;
  try {
    cluster = await startCluster();
    project.provide('pgAdminUrl', cluster.url);
    project.provide('pgSetupError', '');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    console.warn(`[global-setup] no PostgreSQL for the storage tests: ${reason}`);
    project.provide('pgAdminUrl', '');
    project.provide('pgSetupError', reason);
  }
  return async () => {
    await cluster?.stop();
  };
}

interface Cluster {
  url: string;
  stop(): Promise<void>;
}

/** A system tool from PATH or the sbin folders (root's tools may be missing from a test runner's PATH). */
function systemTool(name: string): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin', '/usr/bin', '/bin'];
  for (const dir of dirs) if (dir && existsSync(join(dir, name))) return join(dir, name);
  throw new Error(`${name} not found`);
}

function findBinDir(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a) || b.localeCompare(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  throw new Error('initdb/pg_ctl not found on PATH or under /usr/lib/postgresql/*/bin (set DATABASE_URL or install PostgreSQL)');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** As root: the uid/gid of the `postgres` user, creating the user when missing. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => spawnSync(systemTool('id'), [flag, 'postgres'], { encoding: 'utf8' });
  let uid = id('-u');
  if (uid.status !== 0) {
    const made = spawnSync(systemTool('useradd'), ['--system', '--no-create-home', 'postgres'], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`cannot create the postgres user: ${made.stderr || made.error?.message}`);
    uid = id('-u');
  }
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) throw new Error('cannot find the postgres user');
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

async function startCluster(): Promise<Cluster> {
  const started = Date.now();
  const bin = findBinDir();
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? postgresUser() : undefined;
  const runuser = asRoot ? systemTool('runuser') : '';

  const dir = mkdtempSync('/tmp/authz-pg-');
  const data = join(dir, 'data');
  if (owner) chownSync(dir, owner.uid, owner.gid);

  // Runs a PostgreSQL tool, as the postgres user when we are root.
  const tool = async (name: string, args: string[]) => {
    const [file, argv] = asRoot
      ? [runuser, ['-u', 'postgres', '--', join(bin, name), ...args]]
      : [join(bin, name), args];
    try {
      await run(file, argv, { timeout: 60_000, env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${name} failed: ${(e.stderr || e.stdout || e.message).trim()}`);
    }
  };

  let running = false;
  const stopSync = () => {
    if (!running) return;
    running = false;
    const argv = ['-D', data, '-m', 'immediate', '-w', 'stop'];
    if (asRoot) spawnSync(runuser, ['-u', 'postgres', '--', join(bin, 'pg_ctl'), ...argv], { stdio: 'ignore' });
    else spawnSync(join(bin, 'pg_ctl'), argv, { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await tool('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
    const port = await freePort();
    const settings = [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-k ${dir}`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=300',
    ].join(' ');
    // -l: the server must not inherit our stdout/stderr (execFile would wait on them).
    running = true;
    process.once('exit', stopSync);
    await tool('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', settings, 'start']);
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    console.log(`[global-setup] PostgreSQL (${bin}) on 127.0.0.1:${port}, started in ${Date.now() - started} ms`);
    return {
      url,
      async stop() {
        process.removeListener('exit', stopSync);
        stopSync();
      },
    };
  } catch (err) {
    const log = join(dir, 'server.log');
    const tail = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-10).join('\n') : '';
    process.removeListener('exit', stopSync);
    stopSync();
    rmSync(dir, { recursive: true, force: true });
    if (tail && err instanceof Error) err.message += `\nserver log:\n${tail}`;
    throw err;
  }
}
