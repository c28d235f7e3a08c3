/**
 * A throwaway PostgreSQL cluster for tests and benchmarks: `initdb`/`pg_ctl` from
 * PATH or `/usr/lib/postgresql/<newest>/bin`; as root they run as the `postgres`
 * user (`runuser`), created when missing. The cluster lives in a temp dir under
 * /tmp, listens on 127.0.0.1 on a free port, and is stopped (`-m immediate`) and
 * deleted by `stop()` (or at process exit). Tests turn durability off; the
 * benchmarks keep PostgreSQL's defaults (`durable: true`).
 */
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Cluster {
  /** Admin URL (user postgres, database postgres). */
  url: string;
  /** The cluster's data directory (its postmaster.pid names the server process: bench CPU accounting). */
  dataDir: string;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Keep fsync and synchronous commit on (benchmarks); off by default (tests). */
  durable?: boolean;
  log?: (line: string) => void;
}

/** A system tool from PATH or the sbin folders (root's tools may be missing from a test runner's PATH). */
export function systemTool(name: string): string {
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
  throw new Error(
    'initdb/pg_ctl not found on PATH or under /usr/lib/postgresql/*/bin (set DATABASE_URL or install PostgreSQL)',
  );
}

/** `postgres --version` of the binaries the clusters use (for benchmark reports). */
export function postgresVersion(): string {
  const out = spawnSync(join(findBinDir(), 'postgres'), ['--version'], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout.trim() : 'PostgreSQL (version unknown)';
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
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
export function postgresUser(): { uid: number; gid: number } {
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

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
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
      ...(options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
      '-c max_connections=300',
    ].join(' ');
    // -l: the server must not inherit our stdout/stderr (execFile would wait on them).
    running = true;
    process.once('exit', stopSync);
    await tool('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', settings, 'start']);
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    (options.log ?? console.log)(
      `[pg-cluster] PostgreSQL (${bin}) on 127.0.0.1:${port}, started in ${Date.now() - started} ms`,
    );
    return {
      url,
      dataDir: data,
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
