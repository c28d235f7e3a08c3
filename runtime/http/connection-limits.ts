/**
 * Connection limits of the HTTP server (docs/operations.md#connection-limits):
 *
 * - at most min(AUTHZ_MAX_CONNECTIONS (default 10,000), the process's
 *   file-descriptor soft limit - 64) open connections: past it, Node closes a
 *   new connection at once (`server.maxConnections`), so idle sockets cannot
 *   take the descriptors every other client, the store and the logs need;
 * - a connection that sends no complete request within AUTHZ_REQUEST_TIMEOUT_MS
 *   (default 10 s) is answered 408 and closed: a socket that sends nothing, half
 *   a request, or stays idle between keep-alive requests (Node's
 *   headersTimeout, requestTimeout and keepAliveTimeout, checked every second
 *   or sooner).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Descriptors kept for everything but client connections (the store, logs, webhooks, files). */
export const RESERVED_DESCRIPTORS = 64;

/**
 * The process's soft limit of open files: /proc/self/limits on Linux, else
 * `ulimit -n` of a shell; null when neither tells (or it is unlimited).
 */
export function fdSoftLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft !== undefined) return /^\d+$/.test(soft) ? Number(soft) : null;
  } catch {
    // Not Linux: ask a shell.
  }
  try {
    const out = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 }).trim();
    return /^\d+$/.test(out) ? Number(out) : null;
  } catch {
    return null;
  }
}

/**
 * The connection cap: `configured`, lowered to leave RESERVED_DESCRIPTORS of
 * the descriptor limit free (at least 1).
 *
 * @example
 * connectionCap(10_000, 1024); // 960
 * connectionCap(10_000, null); // 10000
 */
export function connectionCap(configured: number, fdLimit: number | null): number {
  if (fdLimit === null) return configured;
  return Math.max(1, Math.min(configured, fdLimit - RESERVED_DESCRIPTORS));
}

/** Fastify's server options for the request timeout (`http` goes to http.createServer). */
export function timeoutOptions(requestTimeoutMs: number) {
  return {
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: requestTimeoutMs,
    http: { headersTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(requestTimeoutMs / 4))) },
  };
}

/** The start-up line: the cap and where it comes from. */
export function describeConnectionLimits(cap: number, configured: number, fdLimit: number | null, requestTimeoutMs: number): string {
  const fd = fdLimit === null ? 'file descriptors: no limit known' : `file descriptors: ${fdLimit} - ${RESERVED_DESCRIPTORS}`;
  return `Connections: at most ${cap} (AUTHZ_MAX_CONNECTIONS ${configured}, ${fd}); closed without a complete request within ${requestTimeoutMs / 1000} s`;
}
