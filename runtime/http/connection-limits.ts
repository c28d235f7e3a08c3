/**
 * Connection limits of the HTTP server (docs/operations.md#connection-limits):
 *
 * - at most min(AUTHZ_MAX_CONNECTIONS (default 10,000), the process's
 *   file-descriptor soft limit - 64) open connections: past it, Node closes a
 *   new connection at once (`server.maxConnections`), so idle sockets cannot
 *   take the descriptors every other client, the store and the logs need;
 * - a connection that sends no complete request within AUTHZ_REQUEST_TIMEOUT_MS
 *   (default 10 s) is answered 408 and closed: a socket that sends nothing, half
 *   a request, or stays idle between keep-alive requests. Node's
 *   headersTimeout, requestTimeout and keepAliveTimeout (checked every second
 *   or sooner) are set to it, and closeIncompleteRequests holds the bound on
 *   its own, whatever those checks do (a silent socket was seen open 150 s).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

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
    http: {
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(requestTimeoutMs / 4))),
    },
  };
}

/** The start-up line: the cap and where it comes from. */
export function describeConnectionLimits(
  cap: number,
  configured: number,
  fdLimit: number | null,
  requestTimeoutMs: number,
): string {
  const fd =
    fdLimit === null ? 'file descriptors: no limit known' : `file descriptors: ${fdLimit} - ${RESERVED_DESCRIPTORS}`;
  return `Connections: at most ${cap} (AUTHZ_MAX_CONNECTIONS ${configured}, ${fd}); closed without a complete request within ${requestTimeoutMs / 1000} s`;
}

const TIMED_OUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

/** A connection between two requests: its timer, and the bytes it had read when the timer was set. */
interface Waiting {
  timer: NodeJS.Timeout | null;
  readAtArm: number;
  /** Requests received and not yet answered (pipelined requests may overlap). */
  inFlight: number;
  answered: boolean;
}

/**
 * Closes every connection of `server` that holds no request in progress and
 * completes none within `timeoutMs`: from its opening, and again from each
 * answer (a kept-alive socket). One that sent nothing yet, or part of a
 * request, is answered 408 first; an idle kept-alive one is just closed. A
 * request being answered (a long poll) is never cut: the bound is on receiving
 * requests. A timer per waiting connection (unref'd), cleared by the request.
 *
 * @example
 * const app = Fastify(timeoutOptions(10_000));
 * closeIncompleteRequests(app.server, 10_000);
 */
export function closeIncompleteRequests(server: Server, timeoutMs: number): void {
  const waiting = new WeakMap<Socket, Waiting>();
  const expire = (socket: Socket, w: Waiting) => {
    w.timer = null;
    if (socket.destroyed || w.inFlight > 0) return;
    if (!w.answered || socket.bytesRead > w.readAtArm) socket.write(TIMED_OUT);
    socket.destroy();
  };
  const arm = (socket: Socket, w: Waiting) => {
    w.readAtArm = socket.bytesRead;
    w.timer = setTimeout(expire, timeoutMs, socket, w).unref();
  };
  server.on('connection', (socket: Socket) => {
    const w: Waiting = { timer: null, readAtArm: 0, inFlight: 0, answered: false };
    waiting.set(socket, w);
    arm(socket, w);
    socket.once('close', () => {
      if (w.timer) clearTimeout(w.timer);
      w.timer = null;
    });
  });
  server.on(
    'request',
    (request: { socket: Socket }, response: { once(event: 'close', listener: () => void): unknown }) => {
      const { socket } = request;
      const w = waiting.get(socket);
      if (!w) return;
      w.inFlight++;
      if (w.timer) clearTimeout(w.timer);
      w.timer = null;
      response.once('close', () => {
        w.inFlight--;
        w.answered = true;
        if (w.inFlight === 0 && !socket.destroyed && w.timer === null) arm(socket, w);
      });
    },
  );
}
