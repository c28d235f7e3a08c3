/**
 * Benchmark target processes (server.ts): started as children of the load
 * generator, each printing `{ "port", "key" }` once it listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const serverScript = fileURLToPath(new URL('./server.js', import.meta.url));

export interface Target {
  port: number;
  key: string;
  /** The bench account's id (absent for the bare target). */
  account?: string;
  child: ChildProcess;
  /** The path the load posts to (default POST /v1/decisions; the Cerbos peer: its check API). */
  path?: string;
  /** Set when the target serves GET /metrics (authz serve): the bench reads where decisions wait (waits.ts). */
  metricsToken?: string;
}

/**
 * Starts server.ts with `args` (see its flags); `nodeArgs` go to node itself (e.g. --cpu-prof);
 * `other.script` runs another build's server.js (bench/compare), `other.env` adds to its environment.
 */
export async function startTarget(
  args: string[],
  nodeArgs: string[] = [],
  other: { script?: string; env?: Record<string, string> } = {},
): Promise<Target> {
  const child = spawn(process.execPath, [...nodeArgs, other.script ?? serverScript, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...other.env },
  });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`target exited with ${code}`)));
  });
  const { port, key, account } = JSON.parse(line) as { port: number; key: string; account?: string };
  return { port, key, ...(account ? { account } : {}), child };
}

export async function stopTarget(t: Target): Promise<void> {
  if (t.child.exitCode !== null) return;
  t.child.kill('SIGTERM');
  await new Promise((r) => t.child.once('exit', r));
}
