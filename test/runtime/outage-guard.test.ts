/**
 * runtime/outage-guard.ts in a real Node process (the built dist/): an unhandled
 * rejection that says the store is unavailable is logged and the process lives;
 * any other unhandled rejection still ends it, with its message.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../helpers/server-process.js';

const run = promisify(execFile);
const GUARD = pathToFileURL(join(ROOT, 'dist', 'runtime', 'outage-guard.js')).href;

/** Runs a module script that installs the guard and then `body`; its exit code and output. */
async function withGuard(body: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `
    import { guardStoreOutages } from ${JSON.stringify(GUARD)};
    guardStoreOutages((reason) => console.log('outage: ' + reason.code));
    ${body}
  `;
  try {
    const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

describe('the outage guard (unhandled rejections)', () => {
  beforeAll(() => {
    ensureBuilt();
  });

  it('a rejection with a connection code (CONNECTION_CLOSED, 57P01, 25006) is logged and the process goes on', async () => {
    const r = await withGuard(`
      for (const code of ['CONNECTION_CLOSED', '57P01', '25006']) Promise.reject(Object.assign(new Error('lost'), { code }));
      await new Promise((resolve) => setImmediate(resolve)); // unhandled rejections are processed before the check phase
      console.log('still running');
    `);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'outage: CONNECTION_CLOSED',
      'outage: 57P01',
      'outage: 25006',
      'still running',
    ]);
  });

  it('any other unhandled rejection still ends the process with its message', async () => {
    const r = await withGuard(`
      Promise.reject(new TypeError('a bug, not an outage'));
      await new Promise((resolve) => setImmediate(resolve)); // unhandled rejections are processed before the check phase
      console.log('still running');
    `);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('a bug, not an outage');
    expect(r.stdout).not.toContain('still running');
  });
});
