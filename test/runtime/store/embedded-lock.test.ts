/**
 * The embedded store is locked to one process (docs/operations.md#start-up-and-configuration): a second
 * opener of the same data directory is refused before PGlite touches it, in
 * this process and from another (`authz serve` twice on one AUTHZ_DATA_DIR:
 * the second exits at once, exit 2, with a clear message, and the first keeps
 * its data). A lock left by a process that is gone (`kill -9`, a reused pid)
 * does not block the next start. PostgreSQL takes several processes (no lock).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE, StoreLockedError } from '../../../runtime/store/data-dir-lock.js';
import { openStore } from '../../../runtime/store/connect.js';
import { migrate } from '../../../runtime/store/migrate.js';
import { eachLine, ensureBuilt, freePort, HOST, request, ROOT, startServeProcess, stopServer, type ServeProcess } from '../../helpers/server-process.js';

describe('embedded store lock', () => {
  let tmp: string;
  const running: ServeProcess[] = [];
  beforeAll(() => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'authz-lock-'));
  });
  afterAll(async () => {
    for (const p of running) await stopServer(p);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('a second open of the same directory in this process is refused until the first closes', { timeout: 60_000 }, async () => {
    const dataDir = join(tmp, 'in-process');
    const first = await openStore({ dataDir });
    await migrate(first.sql);
    await first.sql`create table if not exists lock_probe (n int)`;
    await first.sql`insert into lock_probe values (1)`;
    await expect(openStore({ dataDir })).rejects.toBeInstanceOf(StoreLockedError);
    await expect(openStore({ dataDir })).rejects.toThrow(`the embedded store in ${dataDir} is in use by another process (pid ${process.pid})`);
    expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    await first.close();
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    const again = await openStore({ dataDir });
    try {
      expect(await again.sql`select n from lock_probe`).toEqual([{ n: 1 }]);
    } finally {
      await again.close();
    }
  });

  it('a lock whose process is gone, or whose pid now names another process, is taken over; a live one is not', { timeout: 60_000 }, async () => {
    const dataDir = join(tmp, 'stale');
    await (await openStore({ dataDir })).close();
    const lock = join(dataDir, LOCK_FILE);
    // A pid that runs no process: a child that has exited.
    const gone = spawn(process.execPath, ['-e', '']);
    const deadPid = await new Promise<number>((resolve) => gone.once('exit', () => resolve(gone.pid!)));
    for (const stale of [
      JSON.stringify({ pid: deadPid, started: '1' }),
      // This test's own process, started at another time: the pid was reused.
      JSON.stringify({ pid: process.pid, started: '1' }),
      'torn',
    ]) {
      writeFileSync(lock, stale);
      const store = await openStore({ dataDir });
      expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(process.pid);
      await store.close();
    }
    // A live process (this one's parent) with its real start time: refused, the lock left as it was.
    const ppid = process.ppid;
    const started = readFileSync(`/proc/${ppid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
    const live = JSON.stringify({ pid: ppid, started });
    writeFileSync(lock, live);
    await expect(openStore({ dataDir })).rejects.toThrow(`(pid ${ppid})`);
    expect(readFileSync(lock, 'utf8')).toBe(live);
    rmSync(lock);
  });

  it('authz serve twice on one data directory: the second exits at once (2) naming the directory, the first keeps serving its data', { timeout: 180_000 }, async () => {
    const dataDir = join(tmp, 'serve');
    const env = { AUTHZ_DATA_DIR: dataDir, AUTHZ_MASTER_KEY: 'lock-test-master-key-0123456789', DATABASE_URL: '' };
    const first = await startServeProcess(await freePort(), env, 120_000);
    running.push(first);
    const testKey = /test key: (svc_test_sk_\w+)/.exec(first.stdout.join('\n'))![1]!;
    const base = `http://${HOST}:${/listening on http:\/\/[^:]+:(\d+)/.exec(first.stdout.join('\n'))![1]}`;
    const decided = await request(base, testKey, 'POST', '/v1/decisions', { agent_id: 'lock-bot', action: 'orders.read', resource: 'order:1' });
    expect(decided.status).toBe(200);

    // The second: no listener, no second PGlite; exit 2 with the message.
    const port = await freePort();
    const full: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST, LOG_LEVEL: 'warn', ...env };
    delete full.DATABASE_URL;
    const second = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], { cwd: ROOT, env: full, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    let err = '';
    eachLine(second.stdout!, (line) => {
      out.push(line);
      if (line.includes('listening on')) second.kill('SIGTERM');
    });
    second.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    const code = await new Promise<number | null>((resolve) => second.once('exit', (c) => resolve(c)));
    expect(code, `${out.join('\n')}\n${err}`).toBe(2);
    expect(err).toContain(`authz serve: the embedded store in ${dataDir} is in use by another process (pid ${first.child.pid})`);
    expect(err).not.toMatch(/\n\s+at /);
    expect(out.join('\n')).not.toContain('Embedded store ready');

    // The first still serves, and its decision is there after it restarts.
    expect((await request(base, testKey, 'GET', `/v1/decisions/${decided.body.id}`)).status).toBe(200);
    await stopServer(first);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);

    // kill -9 leaves the lock behind: the next start takes it over.
    const killed = await startServeProcess(await freePort(), env, 120_000);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(killed.child.pid);
    const after = await startServeProcess(await freePort(), env, 120_000);
    running.push(after);
    const afterBase = `http://${HOST}:${/listening on http:\/\/[^:]+:(\d+)/.exec(after.stdout.join('\n'))![1]}`;
    expect((await request(afterBase, testKey, 'GET', `/v1/decisions/${decided.body.id}`)).status).toBe(200);
    await stopServer(after);
  });
});
