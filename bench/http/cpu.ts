/**
 * CPU accounting for benchmarks (Linux /proc): the CPU time a process, or a
 * PostgreSQL cluster (its postmaster and every backend it started), used
 * between two readings. Divided by the requests answered in between, it gives
 * the CPU each request costs on each side, which a throughput figure on a
 * shared 2-core machine hides.
 *
 * @example
 *   const before = cpuOf([target.child.pid!, ...clusterPids(cluster.dataDir)]);
 *   // ... load ...
 *   const ms = cpuOf(pids) - before; // CPU milliseconds used meanwhile
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

interface Stat {
  ppid: number;
  /** utime + stime, in ticks. */
  ticks: number;
}

/** A process's (`/proc/<pid>/stat`) or one thread's (`/proc/<pid>/task/<tid>/stat`) CPU and parent. */
function stat(pid: number, path = `/proc/${pid}/stat`): Stat | null {
  try {
    const text = readFileSync(path, 'utf8');
    // The command (field 2) may hold spaces: fields after its closing parenthesis.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

/** The postmaster's pid (first line of postmaster.pid) and every process it started, now. */
export function clusterPids(dataDir: string): number[] {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pids = [postmaster];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (Number.isInteger(pid) && stat(pid)?.ppid === postmaster) pids.push(pid);
  }
  return pids;
}

/** CPU milliseconds `pids` used so far (processes gone since are left out). */
export function cpuOf(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) ticks += stat(pid)?.ticks ?? 0;
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** CPU milliseconds the process's main thread (the event loop) used so far. */
export function mainThreadCpuOf(pid: number): number {
  return ((stat(pid, `/proc/${pid}/task/${pid}/stat`)?.ticks ?? 0) * 1000) / TICKS_PER_SECOND;
}

/** The machine's CPU ticks so far, all cores: busy and in all (/proc/stat; idle and iowait are not busy). */
export function machineTicks(): { busy: number; total: number } {
  // user nice system idle iowait irq softirq steal (guest time is counted in user already).
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}
