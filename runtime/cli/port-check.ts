/**
 * Before `authz serve` opens its store: is the address it will listen on free?
 * A port held by another process (often a first `npm start` still running) is
 * told in one line, with what to do, instead of a raw EADDRINUSE stack after
 * seconds spent opening the store. The check binds and releases the address
 * once; a race with another process binding it in between is still caught by
 * the real listen ({@link listenProblem}).
 */
import { createServer } from 'node:net';

/** Why the address cannot be listened on, as a sentence for the operator, or null when it can. */
export async function portProblem(host: string, port: number): Promise<string | null> {
  if (port === 0) return null;
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (e) => resolve(listenProblem(e, host, port)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/**
 * The operator's sentence for an error of listening on host:port, or null when
 * it is not one of listening's (the caller rethrows it).
 */
export function listenProblem(e: unknown, host: string, port: number): string | null {
  const code = (e as { code?: string }).code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code === 'EADDRINUSE') {
    return `port ${port} is already in use on ${host} (another authz serve, or another program): stop it, or start this one on another port, e.g. PORT=${port === 65535 ? 8081 : port + 1} npm start`;
  }
  if (code === 'EACCES')
    return `no permission to listen on ${where} (ports below 1024 need privileges): choose another PORT, e.g. PORT=8080`;
  if (code === 'EADDRNOTAVAIL')
    return `HOST=${host} is not an address of this machine: use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `HOST=${host} does not resolve: use an address such as 127.0.0.1 or 0.0.0.0`;
  return null;
}
