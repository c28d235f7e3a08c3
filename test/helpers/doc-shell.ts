/**
 * Runs a docs page's shell text as a user would type it, for the guide tests
 * (test/docs/*-guide.test.ts): the page's `http://127.0.0.1:8080` and
 * `svc_test_sk_...` become the fresh server's base URL and test key, and
 * `npx authz` runs this checkout's bin/authz.js.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, type FreshServe } from './server-process.js';

export interface ShellResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `script` run by `sh -c` in `cwd` with `env`; never rejects (a failing command is its exit code). */
export function runAsTyped(
  script: string,
  server: FreshServe,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<ShellResult> {
  return new Promise((resolve) => {
    const asTyped = script
      .replaceAll('http://127.0.0.1:8080', server.base)
      .replaceAll('svc_test_sk_...', server.testKey);
    // `npx authz` is this checkout's bin (a clone's npx finds it in node_modules/.bin).
    const prelude = `npx() { if [ "$1" = authz ]; then shift; node "${join(ROOT, 'bin', 'authz.js')}" "$@"; else command npx "$@"; fi; }\n`;
    execFile('sh', ['-c', `${prelude}${asTyped}`], { cwd, env }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}
