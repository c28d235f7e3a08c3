/**
 * `authz serve` on the embedded store, as a newcomer starts it (no
 * AUTHZ_MASTER_KEY, no DATABASE_URL): the store is private and its secrets are
 * sealed.
 * - The process listens on the HTTP port only: no TCP port or Unix socket for
 *   the store that another local client could connect to.
 * - The data directory is 0700 and nothing in it is readable by others, while
 *   running and after stopping.
 * - A master key is generated beside the data (`<dataDir>.master-key`, 0600) and
 *   said so at start; the signing keys are stored sealed (v2 envelopes), so no
 *   private key (PEM text, raw seed, its hex or base64) is anywhere in the data
 *   directory after start, after a key rotation, or after the stop's checkpoint.
 * - Start-up says what the store is doing: a line before opening it and one
 *   after with the time it took.
 * - A start with another master key than the one the keys were sealed with stops
 *   with a clear message (exit 2).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openText } from '../../runtime/secrets/sealed-text.js';
import { openStore } from '../../runtime/store/connect.js';
import { listeningTcpPorts, listeningUnixSockets } from '../helpers/listeners.js';
import { eachLine, ensureBuilt, freePort, HOST, ROOT } from '../helpers/server-process.js';

const ADMIN = 'admin-token-for-at-rest-0123456789';

interface Server {
  child: ChildProcess;
  port: number;
  base: string;
  startup: string[];
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();

function spawnServe(dataDir: string, port: number) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST,
    AUTHZ_DATA_DIR: dataDir,
    AUTHZ_ADMIN_TOKEN: ADMIN,
    LOG_LEVEL: 'warn',
  };
  for (const name of ['DATABASE_URL', 'AUTHZ_MASTER_KEY', 'AUTHZ_MASTER_KEY_FILE', 'AUTHZ_TEST_CLOCK'])
    delete env[name];
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => (running.delete(child), resolve(code))),
  );
  const stdout: string[] = [];
  let stderr = '';
  eachLine(child.stdout!, (line) => stdout.push(line));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return { child, exited, stdout, stderr: () => stderr };
}

async function startServer(dataDir: string): Promise<Server> {
  const port = await freePort();
  const { child, exited, stdout, stderr } = spawnServe(dataDir, port);
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (stdout.some((l) => l.includes(`listening on http://${HOST}:${port}`))) {
        clearInterval(timer);
        resolve();
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`authz serve exited (${code}) before listening:\n${stdout.join('\n')}\n${stderr()}`));
    });
  });
  return { child, port, base: `http://${HOST}:${port}`, startup: stdout, exited };
}

/** Every path under `dir` (itself included) whose mode gives group or others any access. */
function looseModes(dir: string): string[] {
  const loose: string[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    if ((stat.mode & 0o077) !== 0) loose.push(`${path} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(dir);
  return loose;
}

/** Files under `dir` holding any of `needles` (bytes), as "file: needle index". */
function filesHolding(dir: string, needles: Buffer[]): string[] {
  const found: string[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
    else if (stat.isFile()) {
      const content = readFileSync(path);
      needles.forEach((n, i) => content.includes(n) && found.push(`${path}: needle ${i}`));
    }
  };
  visit(dir);
  return found;
}

/** The forms a private key could take in a file: PEM text, the raw seed, hex, base64, base64url, the PKCS#8 DER and its base64. */
function keyForms(pem: string): Buffer[] {
  const key = createPrivateKey(pem);
  const seed = Buffer.from((key.export({ format: 'jwk' }) as { d: string }).d, 'base64url');
  const der = key.export({ format: 'der', type: 'pkcs8' });
  return [
    seed,
    seed.toString('hex'),
    seed.toString('base64').replace(/=+$/, ''),
    seed.toString('base64url'),
    der,
    der.toString('base64').replace(/=+$/, ''),
  ].map((x) => (typeof x === 'string' ? Buffer.from(x) : x));
}

async function stop(server: Server): Promise<number | null> {
  server.child.kill('SIGTERM');
  return server.exited;
}

describe('authz serve: the embedded store is private and its secrets sealed', () => {
  let tmp: string;
  beforeAll(() => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'authz-at-rest-'));
  });
  afterAll(async () => {
    await Promise.all(
      [...running].map(
        (child) => new Promise<void>((resolve) => (child.once('exit', () => resolve()), child.kill('SIGKILL'))),
      ),
    );
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it(
    'listens on HTTP only, keeps its files owner-only, generates a master key and stores no private key text',
    { timeout: 240_000 },
    async () => {
      const dataDir = join(tmp, 'data');
      const keyFile = `${dataDir}.master-key`;
      const server = await startServer(dataDir);
      const out = server.startup.join('\n');

      // Start-up says what it does: the master key, then a line before and after opening the store.
      expect(out).toContain(`Generated a master key in ${keyFile} (mode 0600)`);
      const creating = server.startup.findIndex(
        (l) => l === `Creating the embedded store in ${dataDir} (first start) ...`,
      );
      const ready = server.startup.findIndex((l) => /^Embedded store ready in \d+\.\d s\.$/.test(l));
      expect(creating, out).toBeGreaterThanOrEqual(0);
      expect(ready).toBeGreaterThan(creating);
      expect(lstatSync(keyFile).mode & 0o777).toBe(0o600);
      const masterKey = readFileSync(keyFile, 'utf8').trim();
      expect(masterKey.length).toBeGreaterThanOrEqual(16);

      // No way into the store but the HTTP API.
      expect(listeningTcpPorts(server.child.pid!)).toEqual([server.port]);
      expect(listeningUnixSockets(server.child.pid!)).toEqual([]);

      expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
      expect(looseModes(dataDir)).toEqual([]);
      expect(filesHolding(dataDir, [Buffer.from('PRIVATE KEY')])).toEqual([]);

      const rotated = await fetch(`${server.base}/admin/signing-keys/rotate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(rotated.status).toBe(200);
      const jwks = (await (await fetch(`${server.base}/.well-known/jwks.json`)).json()) as { keys: unknown[] };
      expect(jwks.keys).toHaveLength(2);
      expect(await stop(server)).toBe(0);

      // After the stop (PGlite's shutdown checkpoint): still owner-only, and no key in any form.
      expect(looseModes(dataDir)).toEqual([]);
      const store = await openStore({ dataDir });
      let rows: Array<{ private_key: string; encrypted: boolean }>;
      try {
        rows = await store.sql<
          Array<{ private_key: string; encrypted: boolean }>
        >`select private_key, encrypted from signing_keys`;
      } finally {
        await store.close();
      }
      expect(rows).toHaveLength(2);
      const needles: Buffer[] = [Buffer.from('PRIVATE KEY')];
      for (const row of rows) {
        expect(row.encrypted).toBe(true);
        expect(row.private_key).toMatch(/^aes-256-gcm:v2:/);
        needles.push(...keyForms(openText(row.private_key, true, masterKey, 'the signing keys')));
      }
      expect(filesHolding(dataDir, needles)).toEqual([]);
      expect(looseModes(dataDir)).toEqual([]);
    },
  );

  it(
    'a start with another master key than the keys were sealed with stops with a clear message',
    { timeout: 120_000 },
    async () => {
      const dataDir = join(tmp, 'data');
      const keyFile = `${dataDir}.master-key`;
      writeFileSync(keyFile, 'another-master-key-entirely-0123456789\n', { mode: 0o644 });
      const { exited, stdout, stderr } = spawnServe(dataDir, await freePort());
      expect(await exited).toBe(2);
      expect(stdout.join('\n')).toContain(`Master key: ${keyFile}`);
      expect(stdout.join('\n')).toContain(`Opening the embedded store in ${dataDir} ...`);
      // The message names the key file that was tried (AUTHZ_MASTER_KEY was never set).
      expect(stderr().split('\n')[0]).toMatch(/^authz serve: the master key file /);
      expect(stderr()).toContain(`the master key file ${keyFile} does not open the signing keys`);
      expect(stderr().split('\n')[0]).not.toContain('AUTHZ_MASTER_KEY');
      expect(stderr()).not.toMatch(/\n\s+at /);
      expect(lstatSync(keyFile).mode & 0o777).toBe(0o600); // tightened when read
    },
  );
});
