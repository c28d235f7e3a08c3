/**
 * A lost master key, on both stores (`authz serve` as a child process): when
 * neither AUTHZ_MASTER_KEY nor the key file is there but the store already holds
 * secrets sealed under a key, the start stops (exit 2) with a message naming the
 * key file it looked for and the variable that is not set, and writes no new key
 * file (a new key would open nothing, and would make the loss look fixed). A
 * wrong key names what was tried: the key file, or AUTHZ_MASTER_KEY.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_KINDS, type StoreKind } from '../../helpers/postgres.js';
import {
  eachLine,
  ensureBuilt,
  freePort,
  HOST,
  ROOT,
  startServeProcess,
  stopServer,
} from '../../helpers/server-process.js';

/** The environment of one store: embedded under `dataDir`, or PostgreSQL at `url` with the key file in `dataDir`'s place. */
function storeEnv(kind: StoreKind, dataDir: string, url: string | undefined): NodeJS.ProcessEnv {
  return kind === 'embedded' ? { AUTHZ_DATA_DIR: dataDir } : { DATABASE_URL: url!, AUTHZ_DATA_DIR: dataDir };
}

/** Runs `authz serve` that must exit before listening; its exit code and output. */
async function serveExits(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const port = await freePort();
  const full: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST, LOG_LEVEL: 'warn' };
  for (const k of ['DATABASE_URL', 'AUTHZ_MASTER_KEY', 'AUTHZ_MASTER_KEY_FILE', 'AUTHZ_TEST_CLOCK', 'AUTHZ_DATA_DIR'])
    delete full[k];
  Object.assign(full, env);
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'authz.js'), 'serve'], {
    cwd: ROOT,
    env: full,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  let stderr = '';
  eachLine(child.stdout!, (line) => {
    stdout.push(line);
    // It must not get this far: stop it so the test fails on the code, not on a hang.
    if (line.includes('listening on')) child.kill('SIGTERM');
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stdout: stdout.join('\n'), stderr };
}

describe.each(STORE_KINDS)('a lost master key (%s store)', (kind) => {
  let tmp: string;
  let db: { url: string; drop(): Promise<void> } | undefined;
  let dataDir: string;
  let keyFile: string;

  beforeAll(async () => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'authz-lost-key-'));
    dataDir = join(tmp, 'data');
    keyFile = `${dataDir}.master-key`;
    if (kind === 'postgres') db = await createTestDatabase();
    // A first start generates the key file and seals the signing key with it.
    const first = await startServeProcess(
      await freePort(),
      { ...storeEnv(kind, dataDir, db?.url), AUTHZ_MASTER_KEY: '' },
      120_000,
    );
    expect(first.stdout.join('\n')).toContain(`Generated a master key in ${keyFile}`);
    await stopServer(first);
  }, 180_000);
  afterAll(async () => {
    await db?.drop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it(
    'without the key file and AUTHZ_MASTER_KEY: exit 2 naming the file and the variable, and no key file is written',
    { timeout: 120_000 },
    async () => {
      rmSync(keyFile);
      const run = await serveExits(storeEnv(kind, dataDir, db?.url));
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(2);
      expect(run.stderr).toContain(keyFile);
      expect(run.stderr).toContain('AUTHZ_MASTER_KEY is not set');
      expect(run.stderr).toMatch(/sealed/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stdout).not.toContain('Generated a master key');
      expect(existsSync(keyFile)).toBe(false);
      // An explicit AUTHZ_MASTER_KEY_FILE that is missing: named as such, not written either.
      const elsewhere = join(tmp, 'elsewhere.key');
      const again = await serveExits({ ...storeEnv(kind, dataDir, db?.url), AUTHZ_MASTER_KEY_FILE: elsewhere });
      expect(again.code).toBe(2);
      expect(again.stderr).toContain(elsewhere);
      expect(existsSync(elsewhere)).toBe(false);
    },
  );

  it('a wrong key names what was tried: the key file, or AUTHZ_MASTER_KEY', { timeout: 120_000 }, async () => {
    writeFileSync(keyFile, 'not-the-key-these-were-sealed-with-0123\n', { mode: 0o600 });
    const fromFile = await serveExits(storeEnv(kind, dataDir, db?.url));
    expect(fromFile.code).toBe(2);
    const firstLine = fromFile.stderr.split('\n')[0]!;
    expect(firstLine).toContain(`the master key file ${keyFile} does not open the signing keys`);
    expect(firstLine).not.toContain('AUTHZ_MASTER_KEY');
    const fromEnv = await serveExits({
      ...storeEnv(kind, dataDir, db?.url),
      AUTHZ_MASTER_KEY: 'not-the-key-these-were-sealed-with-0123',
    });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr.split('\n')[0]).toContain('AUTHZ_MASTER_KEY does not open the signing keys');
    expect(fromEnv.stderr.split('\n')[0]).not.toContain(keyFile);
  });
});
