/**
 * A throwaway PostgreSQL primary with a synchronous streaming-replication
 * standby on loopback, for the failover test and benchmark: two nodes on two
 * fixed ports, so one multi-host URL
 * (`postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/db?target_session_attrs=read-write`)
 * reaches whichever is primary.
 *
 * - `initdb` makes the first primary (wal_level replica, synchronous_commit on);
 *   `pg_basebackup -R -X stream` seeds the standby from it; then the primary's
 *   `synchronous_standby_names = '*'` (ALTER SYSTEM, reload), a wait until
 *   pg_stat_replication reports the standby `sync`, then a CHECKPOINT (so the
 *   checkpointer has taken the reload too: `makeSynchronous`): from then on a
 *   commit returns only once the standby has the WAL.
 * - `killPrimary()` SIGKILLs the primary's postmaster and every one of its
 *   processes (a machine that dies, not a clean shutdown); `promote()` runs
 *   `pg_ctl promote` on the standby. The promoted node has no synchronous
 *   standby (its copy of postgresql.auto.conf is cleared of
 *   synchronous_standby_names at seeding) and so takes writes at once;
 *   `reseedStandby()` makes a new standby from it on the dead node's port and
 *   makes that one synchronous again.
 *
 * To look into a failure: `AUTHZ_PG_PAIR_KEEP_LOGS=<dir>` keeps each node's
 * server log (lines stamped with ms, pid and process type) and each killed
 * primary's pg_wal (for pg_waldump) in `<dir>/<the pair's directory name>/`;
 * `AUTHZ_PG_PAIR_DEBUG=1` logs at DEBUG2 (each process's reload, every standby
 * reply). The failover drill writes `authz serve`'s stderr to `<dir>` too.
 *
 * Tools come from PATH (symlinks followed) or `/usr/lib/postgresql/<newest>/bin`;
 * as root they run as the `postgres` user (scripts/pg-cluster.ts). Missing
 * tools fail with a message naming them.
 */
import { execFile } from 'node:child_process';
import {
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { freePort, postgresUser, systemTool } from './pg-cluster.js';

const run = promisify(execFile);

/** The server tools a replicated pair needs. */
export const REPLICATION_TOOLS = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'] as const;

/**
 * The directory holding every one of REPLICATION_TOOLS: a PATH entry's
 * `initdb` followed to its real directory, else the newest `<root>/<v>/bin`.
 * Throws naming the tools it could not find. `path` and `root` (defaults: the
 * process's PATH, Debian's /usr/lib/postgresql) are where it looks.
 *
 * @example
 * findReplicationBinDir('/nowhere', '/nowhere')
 * // throws: PostgreSQL server tools missing for the failover test: initdb, pg_ctl, pg_basebackup, postgres; ...
 */
export function findReplicationBinDir(path: string = process.env.PATH ?? '', root = '/usr/lib/postgresql'): string {
  const candidates: string[] = [];
  for (const dir of path.split(delimiter)) {
    const initdb = dir ? join(dir, 'initdb') : '';
    if (initdb && existsSync(initdb)) candidates.push(dirname(realpathSync(initdb)), dir);
  }
  if (existsSync(root)) {
    const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a) || b.localeCompare(a));
    for (const v of versions) candidates.push(join(root, v, 'bin'));
  }
  let best: { dir: string; missing: string[] } | undefined;
  for (const dir of candidates) {
    const missing = REPLICATION_TOOLS.filter((t) => !existsSync(join(dir, t)));
    if (missing.length === 0) return dir;
    if (!best || missing.length < best.missing.length) best = { dir, missing };
  }
  const missing = best ? `${best.missing.join(', ')} (not beside ${best.dir}/initdb)` : REPLICATION_TOOLS.join(', ');
  throw new Error(
    `PostgreSQL server tools missing for the failover test: ${missing}; install PostgreSQL's server package (Debian: apt-get install postgresql), as .ci/run does`,
  );
}

export interface ReplicationOptions {
  /** Keep fsync on (benchmarks). Off by default: a SIGKILL of the server does not lose what the OS has. */
  durable?: boolean;
  log?: (line: string) => void;
}

interface Node {
  port: number;
  dataDir: string;
}

export interface ReplicaPair {
  /** `127.0.0.1:P1,127.0.0.1:P2`: the two nodes' ports never change. */
  hosts: string;
  /** The multi-host URL of database `db`, `target_session_attrs=read-write`. */
  url(db: string): string;
  /** A single-host admin URL (user postgres) of the current primary. */
  primaryUrl(db?: string): string;
  /** The current primary's and standby's ports (standby undefined between a kill and the reseed). */
  primaryPort(): number;
  standbyPort(): number | undefined;
  /** SIGKILL of the primary's postmaster and all its processes; resolves once they are gone. */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote -w` of the standby, which becomes the primary (without a synchronous standby). */
  promote(): Promise<void>;
  /** A new standby from the primary on the free port (`pg_basebackup -R`), made synchronous (`makeSynchronous`). */
  reseedStandby(): Promise<void>;
  /**
   * `synchronous_standby_names = '*'` on the primary (ALTER SYSTEM, reload); resolves once the
   * standby is `sync` in pg_stat_replication and every commit on the primary waits for it.
   */
  makeSynchronous(): Promise<void>;
  stop(): Promise<void>;
}

/** Settings of both nodes (postgresql.conf, copied to each standby by pg_basebackup). */
export function replicationSettings(durable: boolean): string[] {
  return [
    "listen_addresses = '127.0.0.1'",
    'wal_level = replica',
    'max_wal_senders = 10',
    'hot_standby = on',
    'synchronous_commit = on',
    'max_connections = 200',
    // A standby that lost its primary retries quickly (default 5 s).
    "wal_retrieve_retry_interval = '200ms'",
    ...(durable ? [] : ['fsync = off', 'full_page_writes = off']),
    "log_line_prefix = '%m [%p] %b '",
    ...(process.env.AUTHZ_PG_PAIR_DEBUG ? ['log_min_messages = debug2'] : []),
  ];
}

/** A live primary + synchronous standby on loopback. */
export async function startReplicaPair(options: ReplicationOptions = {}): Promise<ReplicaPair> {
  const log = options.log ?? console.log;
  const bin = findReplicationBinDir();
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? postgresUser() : undefined;
  const runuser = asRoot ? systemTool('runuser') : '';
  const dir = mkdtempSync('/tmp/authz-pg-pair-');
  if (owner) chownSync(dir, owner.uid, owner.gid);

  const tool = async (name: string, args: string[]) => {
    const [file, argv] = asRoot
      ? [runuser, ['-u', 'postgres', '--', join(bin, name), ...args]]
      : [join(bin, name), args];
    try {
      await run(file, argv, { timeout: 120_000, env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${name} ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim()}`);
    }
  };

  const first = await freePort();
  let second = await freePort();
  while (second === first) second = await freePort();
  const ports = [first, second] as const;
  let generation = 0;
  const newDataDir = () => join(dir, `node-${++generation}`);
  const sockDir = dir;
  const startNode = async (node: Node) => {
    const settings = `-p ${node.port} -k ${sockDir}`;
    await tool('pg_ctl', ['-D', node.dataDir, '-l', `${node.dataDir}.log`, '-w', '-t', '60', '-o', settings, 'start']);
  };
  const admin = (port: number, db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`;
  const query = async <T extends object>(port: number, text: string): Promise<T[]> => {
    const sql = postgres(admin(port), { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      return (await sql.unsafe(text)) as unknown as T[];
    } finally {
      await sql.end({ timeout: 2 });
    }
  };

  let primary: Node | undefined;
  let standby: Node | undefined;
  const nodes = new Set<Node>();

  const postmasterPid = (node: Node): number | undefined => {
    const file = join(node.dataDir, 'postmaster.pid');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  /** The postmaster's child processes (backends, walsender, checkpointer...), read from /proc. */
  const childrenOf = (pid: number): number[] => {
    const out: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === pid) out.push(Number(entry));
      } catch {
        // gone meanwhile
      }
    }
    return out;
  };
  const killNode = async (node: Node) => {
    const pid = postmasterPid(node);
    if (pid === undefined || !alive(pid)) return;
    const all = [pid, ...childrenOf(pid)];
    for (const p of all) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // Bounded poll until every process is gone (zombies are reaped by init).
    for (let i = 0; all.some(alive); i++) {
      if (i > 500) throw new Error(`PostgreSQL processes ${all.filter(alive).join(', ')} survived SIGKILL`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const stopAll = () => {
    const keep = process.env.AUTHZ_PG_PAIR_KEEP_LOGS;
    for (const node of nodes) {
      const pid = postmasterPid(node);
      if (pid !== undefined && alive(pid)) {
        for (const p of [pid, ...childrenOf(pid)]) {
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
    }
    nodes.clear();
    if (keep) {
      const to = join(keep, basename(dir));
      mkdirSync(to, { recursive: true });
      for (const f of readdirSync(dir)) if (f.endsWith('.log')) copyFileSync(join(dir, f), join(to, f));
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stopAll);

  /** Seeds a standby from `from` on `port` and starts it; its copy of synchronous_standby_names is cleared. */
  const seed = async (from: Node, port: number): Promise<Node> => {
    const node: Node = { port, dataDir: newDataDir() };
    await tool('pg_basebackup', [
      '-D',
      node.dataDir,
      '-h',
      '127.0.0.1',
      '-p',
      String(from.port),
      '-U',
      'postgres',
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    // Once promoted this node must take writes before a new standby exists: no synchronous_standby_names of its own.
    const auto = join(node.dataDir, 'postgresql.auto.conf');
    if (existsSync(auto))
      writeFileSync(
        auto,
        readFileSync(auto, 'utf8')
          .split('\n')
          .filter((l) => !/^\s*synchronous_standby_names/.test(l))
          .join('\n'),
      );
    nodes.add(node);
    await startNode(node);
    return node;
  };
  /**
   * Makes the primary's standby synchronous; resolves once a commit on the primary waits for it.
   * pg_stat_replication says `sync` as soon as the walsender has taken the reload, but a commit
   * waits only once the checkpointer has taken it too: the checkpointer alone sets the shared
   * flag that commits read (SyncRepUpdateSyncStandbysDefined), and until then they return without
   * the standby. So, once a new session reports `sync` (the postmaster had signalled the
   * checkpointer before it forked that session), a CHECKPOINT: the checkpointer takes a pending
   * reload before it starts a checkpoint, and CHECKPOINT returns once one started after it
   * was asked for has finished.
   */
  const makeSynchronous = async () => {
    await query(primary!.port, "alter system set synchronous_standby_names = '*'");
    await query(primary!.port, 'select pg_reload_conf()');
    for (let i = 0; ; i++) {
      const rows = await query<{ sync_state: string; state: string }>(
        primary!.port,
        'select sync_state, state from pg_stat_replication',
      );
      if (rows.some((r) => r.sync_state === 'sync' && r.state === 'streaming')) break;
      if (i > 600) throw new Error(`the standby did not become synchronous: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await query(primary!.port, 'checkpoint');
  };

  try {
    const started = Date.now();
    const initial: Node = { port: ports[0], dataDir: newDataDir() };
    await tool('initdb', [
      '-D',
      initial.dataDir,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    const conf = join(initial.dataDir, 'postgresql.conf');
    writeFileSync(
      conf,
      `${readFileSync(conf, 'utf8')}\n# replicated pair (scripts/pg-replication.ts)\n${replicationSettings(options.durable ?? false).join('\n')}\n`,
    );
    nodes.add(initial);
    await startNode(initial);
    primary = initial;
    standby = await seed(initial, ports[1]);
    await makeSynchronous();
    log(
      `[pg-replication] PostgreSQL (${bin}) primary 127.0.0.1:${ports[0]}, synchronous standby 127.0.0.1:${ports[1]}, ready in ${Date.now() - started} ms`,
    );
  } catch (err) {
    process.removeListener('exit', stopAll);
    stopAll();
    throw err;
  }

  return {
    hosts: `127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}`,
    url: (db) =>
      `postgres://postgres@127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}/${db}?target_session_attrs=read-write`,
    primaryUrl: (db = 'postgres') => admin(primary!.port, db),
    primaryPort: () => primary!.port,
    standbyPort: () => standby?.port,
    async killPrimary() {
      const dead = primary!;
      await killNode(dead);
      nodes.delete(dead);
      const keep = process.env.AUTHZ_PG_PAIR_KEEP_LOGS;
      if (keep)
        cpSync(join(dead.dataDir, 'pg_wal'), join(keep, basename(dir), `${basename(dead.dataDir)}-pg_wal`), {
          recursive: true,
        });
      rmSync(dead.dataDir, { recursive: true, force: true });
    },
    async promote() {
      if (!standby) throw new Error('no standby to promote');
      await tool('pg_ctl', ['-D', standby.dataDir, '-w', '-t', '60', 'promote']);
      primary = standby;
      standby = undefined;
    },
    async reseedStandby() {
      const port = ports.find((p) => p !== primary!.port)!;
      standby = await seed(primary!, port);
      await makeSynchronous();
    },
    makeSynchronous,
    async stop() {
      process.removeListener('exit', stopAll);
      stopAll();
    },
  };
}
