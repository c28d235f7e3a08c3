/**
 * The embedded store belongs to one process (docs/operations.md#start-up-and-configuration): two PGlite
 * instances on one data directory each see only their own writes, and after a
 * restart one's decisions are gone. Before PGlite opens the directory, the
 * process takes `<dataDir>/authz.lock`, created exclusively (O_EXCL) and holding
 * `{ pid, started }` (`started`: the process's start time in clock ticks since
 * boot, from /proc, where there is one).
 *
 * A lock whose process is gone is stale and taken over: the pid is not alive,
 * or (Linux) a process of that pid started at another time (the pid was
 * reused), or it names this process without this process holding it (a
 * container restarted with the same pid). So a `kill -9` never blocks the next
 * start. A live holder: StoreLockedError, and the store is not opened.
 *
 * Taking over a stale lock: it is renamed aside (atomic), and put back when
 * what was moved was not the stale lock judged (another starter's fresh one).
 */
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const LOCK_FILE = 'authz.lock';

export class StoreLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `the embedded store in ${dataDir} is in use by another process (pid ${pid}): one process at a time opens it. ` +
        'Stop that process first, or give this one another AUTHZ_DATA_DIR (several processes on one store need PostgreSQL: DATABASE_URL).',
    );
  }
}

interface Holder {
  pid: number;
  started: string | null;
}

/** Lock files this process holds (its own pid in a lock file it does not hold is stale). */
const held = new Set<string>();

/** The start time of process `pid` (clock ticks since boot), or null where /proc does not tell. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command (field 2) is in parentheses and may hold spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process that wrote `holder` still runs. */
function holderRuns(holder: Holder, path: string): boolean {
  if (holder.pid === process.pid) return held.has(path);
  if (!alive(holder.pid)) return false;
  const now = startTime(holder.pid);
  // Without /proc only the pid is known: alive counts as running.
  return holder.started === null || now === null || now === holder.started;
}

function readHolder(path: string): { text: string; holder: Holder | null } | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<Holder>;
    if (Number.isInteger(parsed.pid) && parsed.pid! > 0) return { text, holder: { pid: parsed.pid!, started: typeof parsed.started === 'string' ? parsed.started : null } };
  } catch {
    // Torn or foreign content: no holder to wait for.
  }
  return { text, holder: null };
}

/**
 * Takes the lock of `dataDir` (which must exist) for this process; returns its
 * release (idempotent; also run at process exit). Throws StoreLockedError when
 * another live process holds it.
 *
 * @example
 * const release = lockDataDir('/srv/.authz');
 * const db = await PGlite.create('/srv/.authz');
 * // ... on close: await db.close(); release();
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, started: startTime(process.pid) });
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      writeFileSync(path, mine, { flag: 'wx', mode: 0o600 });
      held.add(path);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        held.delete(path);
        process.off('exit', release);
        // Only our own lock: never one another process took over meanwhile.
        if (readHolder(path)?.text === mine) unlinkSync(path);
      };
      process.on('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const found = readHolder(path);
    if (found === null) continue; // released meanwhile
    if (found.holder !== null && holderRuns(found.holder, path)) throw new StoreLockedError(dataDir, found.holder.pid);
    takeOverStale(path, found.text);
  }
  throw new Error(`could not take the lock ${path}: other processes keep taking it`);
}

/** Removes the stale lock whose content is `stale`; puts back a fresh one moved by mistake. */
function takeOverStale(path: string, stale: string): void {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // another starter took it over
    throw err;
  }
  try {
    if (readFileSync(aside, 'utf8') !== stale) {
      try {
        linkSync(aside, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
  } finally {
    unlinkSync(aside);
  }
}
