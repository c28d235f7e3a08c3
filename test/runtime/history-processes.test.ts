/**
 * History across server processes (docs/history.md#exact-under-concurrency):
 * two real `authz serve` child processes (bin/authz.js -> dist/runtime/serve.js)
 * on one PostgreSQL database, over real HTTP. 200 concurrent decisions against
 * `history.count('x.go', '1h') < 5`, split over both processes, give exactly 5
 * allows; a user-scoped sum shared by both processes never passes its cap.
 * No timing is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountKey, serverCalls, split, startServer, stopAll, uniqueId, type Server } from '../helpers/db-servers.js';
import { ensureBuilt } from '../helpers/server-process.js';
import { createTestDatabase } from '../helpers/postgres.js';
import type { JsonObject } from '../helpers/json.js';

const TEST_TIMEOUT = 90_000;

describe('history across two `authz serve` processes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let a: Server;
  let b: Server;
  let key = '';
  const { decide, install } = serverCalls(() => key);

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDatabase();
    a = await startServer('A', db.url);
    b = await startServer('B', db.url);
    key = await accountKey(a, 'history-processes');
  }, 90_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  }, 60_000);

  it(
    "200 concurrent decisions over both processes against history.count('x.go', '1h') < 5 in one session: exactly 5 allows, both processes deciding",
    async () => {
      await install(
        [a, b],
        {
          id: 'pol_go',
          name: 'five-per-hour',
          effect: 'allow',
          actions: ['x.go'],
          condition: "history.count('x.go', '1h') < 5",
        },
        (server) => ({
          agent_id: uniqueId(`probe-${server.name}`),
          session_id: uniqueId('probe-session'),
          action: 'x.go',
        }),
      );
      const session = uniqueId('race');
      const replies = await Promise.all(
        split(200, a, b).map((server, i) =>
          decide(server, { agent_id: `racer-${i % 5}`, session_id: session, action: 'x.go' }),
        ),
      );
      for (const r of replies) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const allowed = replies.filter((r) => r.body.effect === 'allow');
      expect(allowed).toHaveLength(5);
      expect(allowed.map((r) => (r.body.metadata as JsonObject).history[0].value).sort()).toEqual([0, 1, 2, 3, 4]);
      for (const r of replies)
        if (r.body.effect !== 'allow') expect((r.body.metadata as JsonObject).history[0].value).toBe(5);
      // Later decisions through either process see the 5.
      for (const server of [a, b])
        expect((await decide(server, { agent_id: 'later', session_id: session, action: 'x.go' })).body.effect).toBe(
          'deny',
        );
    },
    TEST_TIMEOUT,
  );

  it(
    "a user's sum across both processes: history.sum('shop.buy', '1d', 'user') + amount <= 100 holds under 100 concurrent buys of 7",
    async () => {
      await install(
        [a, b],
        {
          id: 'pol_buy',
          name: 'user-cap',
          effect: 'allow',
          actions: ['shop.buy'],
          condition: "history.sum('shop.buy', '1d', 'user') + amount <= 100",
        },
        (server) => ({
          agent_id: uniqueId(`probe-${server.name}`),
          on_behalf_of: uniqueId('probe-user'),
          action: 'shop.buy',
          amount: 1,
        }),
      );
      const user = uniqueId('user');
      const replies = await Promise.all(
        split(100, a, b).map((server, i) =>
          decide(server, { agent_id: `buyer-${i % 4}`, on_behalf_of: user, action: 'shop.buy', amount: 7 }),
        ),
      );
      for (const r of replies) expect(r.status, JSON.stringify(r.body)).toBe(200);
      // floor(100 / 7) = 14 allowed, 98 in total.
      expect(replies.filter((r) => r.body.effect === 'allow')).toHaveLength(14);
    },
    TEST_TIMEOUT,
  );
});
