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
 * A holder that is stopping (it got SIGTERM or SIGINT: `markStopping` rewrites
 * its lock with `stopping: true`) is waited for, up to 30 s, said once through
 * `onWait`: a restart right after a stop (a supervisor, a terminal's Ctrl-C
 * then the same command) opens the store once the old process has closed it.
 * A live holder not (yet) marked stopping is read again for up to 1 s, the
 * time a process just signalled takes to mark its lock, then refused.
 *
 * Taking over a stale lock: it is renamed aside (atomic), and put back when
 * what was moved was not the stale lock judged (another starter's fresh one).
 */
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const LOCK_FILE = 'authz.lock';

export class StoreLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
    waitedMs = 0,
  ) {
    const still = waitedMs > 0 ? `, still stopping after ${Math.round(waitedMs / 1000)} s` : '';
    super(
      `the embedded store in ${dataDir} is in use by another process (pid ${pid}${still}): one process at a time opens it. ` +
        'Stop that process first, or give this one another AUTHZ_DATA_DIR (several processes on one store need PostgreSQL: DATABASE_URL).',
    );
  }
}

interface Holder {
  pid: number;
  started: string | null;
  stopping: boolean;
}

/** How long a stopping holder is waited for. */
export const STOPPING_WAIT_MS = 30_000;
/** How long a live holder not marked stopping is read again before the refusal. */
const UNMARKED_GRACE_MS = 1_000;
const POLL_MS = 50;

/** Lock files this process holds, with the content it wrote (its own pid in a lock file it does not hold is stale). */
const held = new Map<string, string>();

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
    if (Number.isInteger(parsed.pid) && parsed.pid! > 0) {
      return {
        text,
        holder: {
          pid: parsed.pid!,
          started: typeof parsed.started === 'string' ? parsed.started : null,
          stopping: parsed.stopping === true,
        },
      };
    }
  } catch {
    // Torn or foreign content: no holder to wait for.
  }
  return { text, holder: null };
}

export interface LockOptions {
  /** Told once when a stopping holder is waited for. */
  onWait?: (message: string) => void;
  /** How long a stopping holder is waited for (default STOPPING_WAIT_MS). */
  waitMs?: number;
}

/**
 * Takes the lock of `dataDir` (which must exist) for this process; resolves to
 * its release (idempotent; also run at process exit). A holder that is
 * stopping is waited for (up to `waitMs`, told once through `onWait`).
 *
 * @throws StoreLockedError when another live process holds it (and is not stopping, or still holds it after `waitMs`)
 * @example
 * const release = await lockDataDir('/srv/.authz', { onWait: (m) => console.error(m) });
 * const db = await PGlite.create('/srv/.authz');
 * // ... on close: await db.close(); release();
 */
export async function lockDataDir(dataDir: string, options: LockOptions = {}): Promise<() => void> {
  const path = join(dataDir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, started: startTime(process.pid) });
  const waitMs = options.waitMs ?? STOPPING_WAIT_MS;
  const began = performance.now();
  let told = false;
  let takeOvers = 0;
  for (;;) {
    try {
      writeFileSync(path, mine, { flag: 'wx', mode: 0o600 });
      held.set(path, mine);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const written = held.get(path);
        held.delete(path);
        process.off('exit', release);
        // Only our own lock: never one another process took over meanwhile.
        if (written !== undefined && readHolder(path)?.text === written) unlinkSync(path);
      };
      process.on('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const found = readHolder(path);
    if (found === null) continue; // released meanwhile
    const { holder } = found;
    if (holder === null || !holderRuns(holder, path)) {
      if (++takeOvers > 10) throw new Error(`could not take the lock ${path}: other processes keep taking it`);
      takeOverStale(path, found.text);
      continue;
    }
    const waited = performance.now() - began;
    if (holder.stopping && holder.pid !== process.pid) {
      if (waited >= waitMs) throw new StoreLockedError(dataDir, holder.pid, waited);
      if (!told) {
        told = true;
        options.onWait?.(
          `the embedded store in ${dataDir} is held by pid ${holder.pid}, which is stopping: waiting for it to close the store (up to ${Math.round(waitMs / 1000)} s)`,
        );
      }
    } else if (holder.pid === process.pid || waited >= UNMARKED_GRACE_MS) {
      throw new StoreLockedError(dataDir, holder.pid);
    }
    await sleep(POLL_MS);
  }
}

/**
 * Whether the lock of `dataDir` is held by a live process that is stopping,
 * read again for up to `graceMs` while its holder runs unmarked (just
 * signalled). `authz serve` asks this when its port is still taken: by a
 * stopping process of the same store, it waits for the store and listens
 * after.
 *
 * @example
 * if (portTaken && !(await heldByStoppingProcess('/srv/.authz'))) exitWith('port in use');
 */
export async function heldByStoppingProcess(dataDir: string, graceMs = UNMARKED_GRACE_MS): Promise<boolean> {
  const path = join(dataDir, LOCK_FILE);
  const began = performance.now();
  for (;;) {
    const holder = readHolder(path)?.holder ?? null;
    if (holder === null || holder.pid === process.pid || !holderRuns(holder, path)) return false;
    if (holder.stopping) return true;
    if (performance.now() - began >= graceMs) return false;
    await sleep(POLL_MS);
  }
}

/**
 * Marks the locks this process holds as stopping (`stopping: true`), so that a
 * process starting on the same data directory waits for the store to be
 * closed instead of giving up (called on SIGTERM and SIGINT, before the
 * shutdown). The lock is rewritten atomically (a new file renamed over it).
 *
 * @example
 * process.once('SIGTERM', () => { markStopping(); void shutdown(); });
 */
export function markStopping(): void {
  for (const [path, text] of held) {
    const stopping = JSON.stringify({ ...(JSON.parse(text) as object), stopping: true });
    const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.stopping`;
    try {
      // Still ours (not taken over meanwhile): replaced as a whole, never seen torn.
      if (readHolder(path)?.text !== text) continue;
      writeFileSync(aside, stopping, { mode: 0o600 });
      renameSync(aside, path);
      held.set(path, stopping);
    } catch {
      // The lock stays as it was: a starter then refuses instead of waiting.
      try {
        unlinkSync(aside);
      } catch {
        // not written
      }
    }
  }
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
