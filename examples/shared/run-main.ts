/**
 * What every example server does to start as a program: run `main` only when
 * the file is the script node was started with (not when a test imports it),
 * read `PORT`/`HOST`, and close on SIGINT/SIGTERM.
 *
 * @example
 * ```ts
 * import { closeOnSignals, listenAddress, runAsMain } from '../shared/run-main.js';
 *
 * runAsMain(import.meta.url, async () => {
 *   const app = await buildReceiver({ secret });
 *   closeOnSignals(app);
 *   await app.listen(listenAddress(4000));
 * });
 * ```
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** True when `moduleUrl` (a module's `import.meta.url`) is the script node started, through symlinks. */
export function isMainModule(moduleUrl: string, script: string | undefined = process.argv[1]): boolean {
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/** Runs `main` when the module is the started script; a failure prints its message and exits 1. */
export function runAsMain(moduleUrl: string, main: () => Promise<void>): void {
  if (!isMainModule(moduleUrl)) return;
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

/** `{ port, host }` from `PORT` (else `defaultPort`) and `HOST` (else 127.0.0.1); a bad PORT throws. */
export function listenAddress(
  defaultPort: number,
  env: NodeJS.ProcessEnv = process.env,
): { port: number; host: string } {
  const port = Number(env.PORT || defaultPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be a port number, not ${JSON.stringify(env.PORT)}`);
  return { port, host: env.HOST || '127.0.0.1' };
}

/** Closes `server` and exits 0 on the first SIGINT or SIGTERM. */
export function closeOnSignals(server: { close(): Promise<unknown> }): void {
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
