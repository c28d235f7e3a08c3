/**
 * Session labels across processes and restarts (docs/api.md#sessions): labels are
 * written with the decision that adds them (or by the API call) before its answer,
 * so the session's next decision, in any process, is decided with them.
 *
 * 1. Two real `authz serve` processes on one PostgreSQL, over HTTP: a label added
 *    by a decision through A, and one added through B's API, decide the very next
 *    decision through the other process (no waiting, no polling).
 * 2. Both stores: two runtimes on one store (the embedded store serves one
 *    process; two services over it are two processes' caches), then a restart
 *    of the store (PostgreSQL, and the embedded store on disk): the labels are there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../runtime/domain/accounts.js';
import { openStore, type StoreOptions } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { accountKey, serverCalls, startServer, stopAll, uniqueId, type Server } from '../helpers/db-servers.js';
import { createTestDatabase, STORE_KINDS, type StoreKind, type TestStore } from '../helpers/postgres.js';
import { ensureBuilt } from '../helpers/server-process.js';
import { decide, type DecisionAnswer } from '../helpers/kit.js';
import { json, START, startRuntime, type TestRuntime } from './helpers/app.js';

const FILES = { id: 'pol_files', name: 'files', effect: 'allow', actions: ['files.read'], labels: ['private'] };
const SEND = { id: 'pol_send', name: 'send', effect: 'allow', actions: ['email.send'] };
const SEND_REVIEW = {
  id: 'pol_send_review',
  name: 'send-review',
  effect: 'review',
  priority: 10,
  actions: ['email.send'],
  condition: "contains(session.labels, 'private') && contains(session.labels, 'untrusted')",
};

describe('session labels across two `authz serve` processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let a: Server;
  let b: Server;
  let key = '';
  const { api, decideOk, install } = serverCalls(() => key);

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDatabase();
    a = await startServer('A', db.url);
    b = await startServer('B', db.url);
    key = await accountKey(a, 'labels-processes');
  }, 120_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  }, 60_000);

  it(
    "a label added through one process decides the session's next decision through the other",
    { timeout: 90_000 },
    async () => {
      // Installed through A until both decide with each (the review's probe: a session already holding both labels).
      await install([a, b], FILES, () => ({ agent_id: 'probe', action: 'files.read' }));
      await install([a, b], SEND, () => ({ agent_id: 'probe', action: 'email.send' }));
      const probe = uniqueId('probe-run');
      expect(
        (await api(a, 'POST', `/v1/sessions/${probe}/labels`, { labels: ['private', 'untrusted'], agent_id: 'probe' }))
          .status,
      ).toBe(200);
      await install([a, b], SEND_REVIEW, () => ({ agent_id: 'probe', action: 'email.send', session_id: probe }));
      for (const [first, second] of [
        [a, b],
        [b, a],
      ] as const) {
        const session = uniqueId('run');
        const agentId = uniqueId('mail');
        const send = { agent_id: agentId, action: 'email.send', session_id: session };
        expect(await decideOk(second, send)).toMatchObject({ effect: 'allow', metadata: { session_labels: [] } });
        // A policy's label, written with the decision through `first`...
        expect((await decideOk(first, { agent_id: agentId, action: 'files.read', session_id: session })).effect).toBe(
          'allow',
        );
        // ...is in the next decision through `second`, at once.
        expect(await decideOk(second, send)).toMatchObject({
          effect: 'allow',
          metadata: { session_labels: ['private'] },
        });
        // An API label through `second`, then a decision through `first`.
        const added = await api(second, 'POST', `/v1/sessions/${session}/labels`, {
          labels: ['untrusted'],
          agent_id: agentId,
          detail: 'inbox',
        });
        expect(added.status, JSON.stringify(added.body)).toBe(200);
        expect(await decideOk(first, send)).toMatchObject({
          effect: 'review',
          policy_id: 'pol_send_review',
          metadata: { session_labels: ['private', 'untrusted'] },
        });
        const read = await api(first, 'GET', `/v1/sessions/${session}`);
        expect(read.body).toMatchObject({ object: 'session', id: session, decisions: 4 });
        expect((read.body.labels as Array<{ label: string; source: string }>).map((l) => [l.label, l.source])).toEqual([
          ['private', 'policy'],
          ['untrusted', 'api'],
        ]);
      }
    },
  );
});

interface Location {
  options: StoreOptions;
  remove(): Promise<void>;
}

async function newLocation(kind: StoreKind): Promise<Location> {
  if (kind === 'postgres') {
    const db = await createTestDatabase();
    return { options: { databaseUrl: db.url, max: 5 }, remove: () => db.drop() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'authz-labels-'));
  return { options: { dataDir: join(dir, 'data') }, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}

async function open(location: Location): Promise<TestStore> {
  const store = await openStore(location.options);
  await migrate(store.sql);
  return Object.assign(store, { dispose: () => store.close() });
}

describe.each(STORE_KINDS)('session labels: two runtimes on one store, then a restart (%s)', (kind) => {
  let location: Location | undefined;
  const runtimes: TestRuntime[] = [];
  let store: TestStore | undefined;

  afterAll(async () => {
    for (const rt of runtimes) await rt.close();
    await store?.close();
    await location?.remove();
  });

  it(
    "each runtime's labels decide the other's next decision; after a restart the session is as it was",
    { timeout: 180_000 },
    async () => {
      location = await newLocation(kind);
      store = await open(location);
      await createAccount(store.sql, 'main', new Date(START));
      const one = await startRuntime(kind, { store });
      const two = await startRuntime(kind, { store });
      runtimes.push(one, two);
      await one.setPolicies([FILES, SEND, SEND_REVIEW] as never);
      // `two` has not loaded the environment's set yet: its first decision reads the one just stored.
      const session = 'run-shared';
      const send = { agent_id: 'mailer', action: 'email.send', session_id: session };
      // Two's first look at the session: no labels.
      expect(await decide(two, send)).toMatchObject({ effect: 'allow', metadata: { session_labels: [] } });
      expect((await decide(one, { agent_id: 'files', action: 'files.read', session_id: session })).effect).toBe(
        'allow',
      );
      expect((await decide(two, send)).metadata.session_labels).toEqual(['private']);
      const added = await two.call(two.testKey, {
        method: 'POST',
        url: `/v1/sessions/${session}/labels`,
        payload: { labels: ['untrusted'], agent_id: 'inbox' },
      });
      expect(added.statusCode, added.body).toBe(200);
      const reviewed: DecisionAnswer = await decide(one, send);
      expect(reviewed).toMatchObject({ effect: 'review', metadata: { session_labels: ['private', 'untrusted'] } });
      const before = json(await one.call(one.testKey, { method: 'GET', url: `/v1/sessions/${session}` }));
      expect(before).toMatchObject({ decisions: 4, last_decision_at: reviewed.evaluated_at });

      // Restart: both runtimes and the store closed, the store opened again.
      for (const rt of runtimes.splice(0)) await rt.close();
      await store.close();
      store = await open(location);
      const again = await startRuntime(kind, { store });
      runtimes.push(again);
      expect(json(await again.call(again.testKey, { method: 'GET', url: `/v1/sessions/${session}` }))).toEqual(before);
      expect((await decide(again, send)).effect).toBe('review');
    },
  );
});
