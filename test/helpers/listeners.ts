/**
 * The listening sockets a process owns, read from /proc (Linux): its socket
 * file descriptors' inodes matched against the kernel's TCP and Unix socket
 * tables. For tests that a process offers no way in but the ones it should.
 *
 *   expect(listeningTcpPorts(child.pid!)).toEqual([httpPort]);
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const TCP_LISTEN = '0A';
/** __SO_ACCEPTCON in /proc/net/unix's Flags: a listening Unix socket. */
const UNIX_ACCEPTCON = 0x10000;

function socketInodes(pid: number | 'self'): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

function table(pid: number | 'self', name: string): string[][] {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/net/${name}`, 'utf8');
  } catch {
    return []; // e.g. no IPv6
  }
  return text
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f.length > 1);
}

/** Local ports of the TCP (IPv4 and IPv6) sockets `pid` listens on, sorted. */
export function listeningTcpPorts(pid: number | 'self' = 'self'): number[] {
  const mine = socketInodes(pid);
  const ports: number[] = [];
  for (const name of ['tcp', 'tcp6']) {
    for (const f of table(pid, name)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (f[3] === TCP_LISTEN && mine.has(f[9]!)) ports.push(parseInt(f[1]!.split(':').pop()!, 16));
    }
  }
  return ports.sort((a, b) => a - b);
}

/** Paths (or '@abstract' names, '' when unnamed) of the Unix sockets `pid` listens on. */
export function listeningUnixSockets(pid: number | 'self' = 'self'): string[] {
  const mine = socketInodes(pid);
  const out: string[] = [];
  for (const f of table(pid, 'unix')) {
    // Num RefCount Protocol Flags Type St Inode Path
    if ((parseInt(f[3]!, 16) & UNIX_ACCEPTCON) !== 0 && mine.has(f[6]!)) out.push(f[7] ?? '');
  }
  return out.sort();
}
