/**
 * The embedded store is private to its process and its owner: opening it adds
 * no listener (TCP or Unix) another local client could connect to; its data
 * directory is 0700 and nothing in it is readable or writable by group or
 * others, after opening and after closing, and a directory left with loose
 * modes is tightened when it opens; and it still serves transactions over its
 * in-process connection.
 */
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../runtime/store/connect.js';
import { migrate } from '../../../runtime/store/migrate.js';
import { listeningTcpPorts, listeningUnixSockets } from '../../helpers/listeners.js';

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

describe('embedded store: private to its process and owner', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authz-private-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens no listener: no TCP port and no Unix socket more than before', async () => {
    const tcpBefore = listeningTcpPorts();
    const unixBefore = listeningUnixSockets();
    const store = await openStore({ dataDir: join(dir, 'listen') });
    try {
      await migrate(store.sql);
      expect(await store.sql`select 1 as one`).toEqual([{ one: 1 }]);
      expect(listeningTcpPorts()).toEqual(tcpBefore);
      expect(listeningUnixSockets()).toEqual(unixBefore);
    } finally {
      await store.close();
    }
    const memory = await openStore({ dataDir: 'memory://' });
    try {
      expect(listeningTcpPorts()).toEqual(tcpBefore);
      expect(listeningUnixSockets()).toEqual(unixBefore);
    } finally {
      await memory.close();
    }
  });

  it('keeps its data directory 0700 and every file in it owner-only, open and closed', async () => {
    const dataDir = join(dir, 'nested', 'modes');
    const store = await openStore({ dataDir });
    try {
      await migrate(store.sql);
      await store.sql`insert into accounts (id, name, created_at) values ('acc_modes', 'Modes', now())`;
      expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
      expect(looseModes(dataDir)).toEqual([]);
    } finally {
      await store.close();
    }
    expect(looseModes(dataDir)).toEqual([]);
  });

  it('tightens an existing directory left with loose modes when it opens', async () => {
    const dataDir = join(dir, 'loose');
    const first = await openStore({ dataDir });
    await migrate(first.sql);
    await first.close();
    const loosen = (path: string) => {
      const stat = lstatSync(path);
      chmodSync(path, stat.isDirectory() ? 0o777 : 0o666);
      if (stat.isDirectory()) for (const name of readdirSync(path)) loosen(join(path, name));
    };
    loosen(dataDir);
    expect(looseModes(dataDir).length).toBeGreaterThan(100);
    const second = await openStore({ dataDir });
    try {
      expect(looseModes(dataDir)).toEqual([]);
      expect(await second.sql`select count(*)::int as n from schema_migrations`).toEqual([{ n: expect.any(Number) }]);
    } finally {
      await second.close();
    }
  });

  it('serves transactions over the in-process connection, and rolls back a failed one', async () => {
    const store = await openStore({ dataDir: 'memory://' });
    try {
      await migrate(store.sql);
      await store.sql.begin(async (tx) => {
        await tx`insert into accounts (id, name, created_at) values ('acc_tx1', 'One', now())`;
        await tx`insert into accounts (id, name, created_at) values ('acc_tx2', 'Two', now())`;
      });
      await expect(
        store.sql.begin(async (tx) => {
          await tx`insert into accounts (id, name, created_at) values ('acc_tx3', 'Three', now())`;
          await tx`select 1/0`;
        }),
      ).rejects.toThrow(/division by zero/);
      const rows = await store.sql<Array<{ id: string }>>`select id from accounts where id like 'acc_tx%' order by id`;
      expect(rows.map((r) => r.id)).toEqual(['acc_tx1', 'acc_tx2']);
      // Large answers arrive whole (several chunks through the stream).
      const [big] = await store.sql<Array<{ s: string }>>`select repeat('x', 1000000) as s`;
      expect(big!.s).toHaveLength(1_000_000);
    } finally {
      await store.close();
    }
  });
});
