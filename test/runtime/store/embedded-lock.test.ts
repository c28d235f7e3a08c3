/**
 * The embedded store is locked to one process (docs/operations.md#start-up-and-configuration): a second
 * opener of the same data directory is refused before PGlite touches it, in
 * this process and from another (`authz serve` twice on one AUTHZ_DATA_DIR:
 * the second exits at once, exit 2, with a clear message, and the first keeps
 * its data). A lock left by a process that is gone (`kill -9`, a reused pid)
 * does not block the next start. PostgreSQL takes several processes (no lock).
 * A restart right after a stop (SIGTERM to the process group, under load, with
 * webhooks in flight, started again at once on the same port) waits for the
 * stopping process, says so once, and serves; the old one stops promptly.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE, lockDataDir, markStopping, StoreLockedError } from '../../../runtime/store/data-dir-lock.js';
import { openStore } from '../../../runtime/store/connect.js';
import { migrate } from '../../../runtime/store/migrate.js';
import {
  eachLine,
  ensureBuilt,
  freePort,
  HOST,
  request,
  ROOT,
  startServeProcess,
  stopServer,
  type ServeProcess,
} from '../../helpers/server-process.js';

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

  it(
    'a second open of the same directory in this process is refused until the first closes',
    { timeout: 60_000 },
    async () => {
      const dataDir = join(tmp, 'in-process');
      const first = await openStore({ dataDir });
      await migrate(first.sql);
      await first.sql`create table if not exists lock_probe (n int)`;
      await first.sql`insert into lock_probe values (1)`;
      await expect(openStore({ dataDir })).rejects.toBeInstanceOf(StoreLockedError);
      await expect(openStore({ dataDir })).rejects.toThrow(
        `the embedded store in ${dataDir} is in use by another process (pid ${process.pid})`,
      );
      expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
      await first.close();
      expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
      const again = await openStore({ dataDir });
      try {
        expect(await again.sql`select n from lock_probe`).toEqual([{ n: 1 }]);
      } finally {
        await again.close();
      }
    },
  );

  it(
    'a lock whose process is gone, or whose pid now names another process, is taken over; a live one is not',
    { timeout: 60_000 },
    async () => {
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
    },
  );

  it(
    'a live holder marked stopping is waited for, said once: taken when it lets go, refused after the wait',
    { timeout: 60_000 },
    async () => {
      const dataDir = join(tmp, 'stopping');
      mkdirSync(dataDir, { recursive: true });
      const lock = join(dataDir, LOCK_FILE);
      const ppid = process.ppid;
      const started = readFileSync(`/proc/${ppid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
      const stopping = JSON.stringify({ pid: ppid, started, stopping: true });
      writeFileSync(lock, stopping);
      const told: string[] = [];
      await expect(lockDataDir(dataDir, { waitMs: 600, onWait: (m) => told.push(m) })).rejects.toThrow(
        `(pid ${ppid}, still stopping after 1 s)`,
      );
      expect(told).toEqual([
        `the embedded store in ${dataDir} is held by pid ${ppid}, which is stopping: waiting for it to close the store (up to 1 s)`,
      ]);
      expect(readFileSync(lock, 'utf8')).toBe(stopping);
      // Let go 300 ms into the wait: taken.
      const letGo = setTimeout(() => rmSync(lock), 300);
      const release = await lockDataDir(dataDir, { onWait: (m) => told.push(m) });
      clearTimeout(letGo);
      expect(told).toHaveLength(2);
      expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: process.pid });
      // Marked stopping by this process: rewritten whole, and still released as its own.
      markStopping();
      expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: process.pid, stopping: true });
      release();
      expect(existsSync(lock)).toBe(false);
    },
  );

  it(
    'authz serve twice on one data directory: the second exits at once (2) naming the directory, the first keeps serving its data',
    { timeout: 180_000 },
    async () => {
      const dataDir = join(tmp, 'serve');
      const env = { AUTHZ_DATA_DIR: dataDir, AUTHZ_MASTER_KEY: 'lock-test-master-key-0123456789', DATABASE_URL: '' };
      const first = await startServeProcess(await freePort(), env, 120_000);
      running.push(first);
      const testKey = /test key: (svc_test_sk_\w+)/.exec(first.stdout.join('\n'))![1]!;
      const base = `http://${HOST}:${/listening on http:\/\/[^:]+:(\d+)/.exec(first.stdout.join('\n'))![1]}`;
      const decided = await request(base, testKey, 'POST', '/v1/decisions', {
        agent_id: 'lock-bot',
        action: 'orders.read',
        resource: 'order:1',
      });
      expect(decided.status).toBe(200);

      // The second: no listener, no second PGlite; exit 2 with the message.
      const port = await freePort();
      const full: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST, LOG_LEVEL: 'warn', ...env };
      delete full.DATABASE_URL;
      const second = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], {
        cwd: ROOT,
        env: full,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const out: string[] = [];
      let err = '';
      eachLine(second.stdout!, (line) => {
        out.push(line);
        if (line.includes('listening on')) second.kill('SIGTERM');
      });
      second.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
      const code = await new Promise<number | null>((resolve) => second.once('exit', (c) => resolve(c)));
      expect(code, `${out.join('\n')}\n${err}`).toBe(2);
      expect(err).toContain(
        `authz serve: the embedded store in ${dataDir} is in use by another process (pid ${first.child.pid})`,
      );
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
    },
  );
  it(
    'restart right after a stop: SIGTERM to the process group under load with webhooks pending, started again at once on the same port, waits for the old one (said at most once), serves; the stop of the old one is measured',
    { timeout: 300_000 },
    async () => {
      const dataDir = join(tmp, 'restart');
      // A webhook receiver that answers nothing for 30 s: deliveries are in flight at the stop, and the
      // dispatcher's 10 s timeout is far off.
      let received = 0;
      const receiver = createServer((req, res) => {
        req.resume();
        received++;
        const timer = setTimeout(() => res.end('ok'), 30_000);
        res.on('close', () => clearTimeout(timer));
      });
      await new Promise<void>((resolve) => receiver.listen(0, HOST, resolve));
      const hook = `http://${HOST}:${(receiver.address() as AddressInfo).port}/hook`;
      const port = await freePort();
      const env = {
        AUTHZ_DATA_DIR: dataDir,
        AUTHZ_MASTER_KEY: 'restart-test-master-key-0123456789',
        DATABASE_URL: '',
        AUTHZ_WEBHOOK_ALLOW_PRIVATE: '1',
      };
      const first = await startServeProcess(port, env, 120_000, undefined, true);
      running.push(first);
      const testKey = /test key: (svc_test_sk_\w+)/.exec(first.stdout.join('\n'))![1]!;
      const base = `http://${HOST}:${port}`;
      expect((await request(base, testKey, 'POST', '/v1/webhooks', { url: hook })).status).toBe(201);
      // Load: four clients deciding in a loop, each decision an event delivered to the slow receiver.
      let loading = true;
      let decided = 0;
      const loaders = Array.from({ length: 4 }, async () => {
        while (loading) {
          const r = await request(base, testKey, 'POST', '/v1/decisions', {
            agent_id: 'restart-bot',
            action: 'orders.read',
            resource: `order:${decided}`,
          }).catch(() => null);
          if (r?.status === 200) decided++;
          else await new Promise((res) => setTimeout(res, 50));
        }
      });
      while (received < 20) await new Promise((r) => setTimeout(r, 50));
      const lastDecision = await request(base, testKey, 'POST', '/v1/decisions', {
        agent_id: 'restart-bot',
        action: 'orders.read',
        resource: 'order:last',
      });
      expect(lastDecision.status).toBe(200);

      // Stopped as a terminal or a supervisor stops it, and started again at once.
      const stoppedAt = performance.now();
      const exitedAt = first.exited.then((e) => ({ ...e, ms: performance.now() - stoppedAt }));
      process.kill(-first.child.pid!, 'SIGTERM');
      const second = await startServeProcess(port, env, 120_000);
      running.push(second);
      const old = await exitedAt;
      loading = false;
      await Promise.all(loaders);
      receiver.closeAllConnections();
      receiver.close();
      console.log(
        `restart under load (${decided} decisions, ${received} deliveries received): the old process stopped in ${Math.round(old.ms)} ms; the new one listened ${Math.round(performance.now() - stoppedAt)} ms after the SIGTERM`,
      );
      expect(old.code, first.stderr.join('')).toBe(0);
      expect(second.stderr.join('')).not.toContain('in use by another process');
      // Said once, when the new process reached the store before the old one had closed it (a loaded machine
      // boots the new one slower than the old one stops: the next test holds the lock for certain).
      const waits = second.stdout.filter((l) => l.includes('which is stopping: waiting'));
      expect(waits.length, second.stdout.join('\n')).toBeLessThanOrEqual(1);
      // How promptly it stopped is measured (logged above, docs/operations.md), not asserted: tests assert no durations.
      // The new process serves the old one's data.
      expect((await request(base, testKey, 'GET', `/v1/decisions/${lastDecision.body.id}`)).status).toBe(200);
      await stopServer(second);
    },
  );
  it(
    'a new authz serve waits for a holder that is stopping (said once) and serves once it lets go',
    { timeout: 240_000 },
    async () => {
      const dataDir = join(tmp, 'waits');
      mkdirSync(dataDir, { recursive: true });
      // A real process holding the lock with the service's own code, as a stopping `authz serve` does: on
      // SIGTERM it marks the lock stopping; it lets go on SIGUSR2, sent once the new serve says it waits.
      const holderScript = `
      import { lockDataDir, markStopping } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'runtime', 'store', 'data-dir-lock.js')).href)};
      const release = await lockDataDir(${JSON.stringify(dataDir)});
      process.on('SIGTERM', () => markStopping());
      process.on('SIGUSR2', () => { release(); process.exit(0); });
      console.log('locked');
      setInterval(() => {}, 1000);`;
      const holder = spawn(process.execPath, ['--input-type=module', '-e', holderScript], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise<void>((resolve) => eachLine(holder.stdout!, (line) => line === 'locked' && resolve()));
      let holderExited = false;
      const holderGone = new Promise((resolve) => holder.once('exit', () => resolve((holderExited = true))));
      holder.kill('SIGTERM');
      const full: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: String(await freePort()),
        HOST,
        LOG_LEVEL: 'warn',
        AUTHZ_DATA_DIR: dataDir,
        AUTHZ_MASTER_KEY: 'wait-test-master-key-0123456789',
      };
      delete full.DATABASE_URL;
      const served = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], {
        cwd: ROOT,
        env: full,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const out: string[] = [];
      let err = '';
      served.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
      let exitedBeforeListening: boolean | null = null;
      const listened = new Promise<void>((resolve, reject) => {
        eachLine(served.stdout!, (line) => {
          out.push(line);
          if (line.includes('which is stopping: waiting')) holder.kill('SIGUSR2');
          if (line.includes('listening on')) {
            exitedBeforeListening = holderExited;
            resolve();
          }
        });
        served.once('exit', (code) => reject(new Error(`authz serve exited (${code}):\n${out.join('\n')}\n${err}`)));
      });
      try {
        await listened;
        await holderGone;
        expect(out.filter((l) => l.includes('is held by'))).toEqual([
          `the embedded store in ${dataDir} is held by pid ${holder.pid}, which is stopping: waiting for it to close the store (up to 30 s)`,
        ]);
        // It listened only once the holder had let go (and exited).
        expect(exitedBeforeListening).toBe(true);
      } finally {
        holder.kill('SIGKILL');
        served.kill('SIGTERM');
        await new Promise((resolve) => (served.exitCode === null ? served.once('exit', resolve) : resolve(null)));
      }
    },
  );
});
