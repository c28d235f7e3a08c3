/**
 * Real `authz serve` child processes on one PostgreSQL database, on the real
 * clock (no test clock), for the tests of budgets and limits across processes:
 * started one after the other (each start runs the migrations), stopped with
 * SIGTERM (SIGKILL after a while). Only the processes started here are stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { eachLine, freePort, HOST, ROOT } from './server-process.js';

const AUTHZ_JS = join(ROOT, 'bin', 'authz.js');
export const ADMIN_TOKEN = 'admin-token-for-limits-processes-0123456789';

export interface Server {
  name: string;
  child: ChildProcess;
  base: string;
  stdout: string[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The processes started and not yet exited. */
export const running = new Set<Server>();

/** Starts `authz serve` on the database and resolves once it prints that it listens. */
export async function startServer(name: string, databaseUrl: string, timeoutMs = 30_000): Promise<Server> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
    PORT: String(port),
    HOST,
    LOG_LEVEL: 'warn',
    AUTHZ_KEY_RATE_LIMIT: '1000000',
    // No periodic reload of exhausted budgets during the test: they cross processes by NOTIFY only.
    AUTHZ_BUDGET_SWEEP_SECONDS: '3600',
  };
  delete env.AUTHZ_DATA_DIR;
  delete env.AUTHZ_TEST_CLOCK;
  const child = spawn(process.execPath, [AUTHZ_JS, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const server: Server = { name, child, base: `http://${HOST}:${port}`, stdout, stderr, exited };
  running.add(server);
  void exited.then(() => running.delete(server));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: no "listening" within ${timeoutMs} ms; stdout:\n${stdout.join('\n')}\nstderr:\n${stderr.join('')}`)), timeoutMs);
    eachLine(child.stdout!, (line) => {
      stdout.push(line);
      if (line.includes(`listening on http://${HOST}:${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${name}: authz serve exited (${code ?? signal}) before listening; stdout:\n${stdout.join('\n')}\nstderr:\n${stderr.join('')}`));
    });
  });
  return server;
}

/** SIGTERM, wait for the exit; SIGKILL after `withinMs`. */
export async function stopServer(server: Server, withinMs = 10_000): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), withinMs);
  });
  const result = await Promise.race([server.exited, late]);
  clearTimeout(timer);
  if (result === 'late') {
    server.child.kill('SIGKILL');
    await server.exited;
  }
}

/** Stops every process started here (afterAll). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((server) => stopServer(server)));
}
