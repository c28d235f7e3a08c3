/**
 * The one shape of a background task (runtime/background/task.ts), on both
 * stores: rounds every `intervalMs`, one at a time, a failed round reported and
 * the next one run, `stop()` waiting for the round under way, none after it;
 * LISTENs on PostgreSQL (a NOTIFY reaches the task, none after `stop()`), none
 * on the embedded store.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTask } from '../../runtime/background/task.js';
import { CHANNELS, notify } from '../../runtime/store/channels.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../helpers/postgres.js';

const POLL = { timeout: 5_000, interval: 5 };

describe.each(STORE_KINDS)('background tasks (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.dispose();
  });

  it('runs its round every intervalMs; a failed round goes to onError and the next one runs', async () => {
    const errors: unknown[] = [];
    let rounds = 0;
    const task = await startTask(store, {
      rounds: {
        run: async () => {
          rounds++;
          if (rounds === 2) throw new Error('round 2 failed');
        },
        intervalMs: 10,
      },
      onError: (e) => errors.push(e),
    });
    await vi.waitFor(() => expect(rounds).toBeGreaterThanOrEqual(4), POLL);
    await task.stop();
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('round 2 failed');

    // Another task on the same interval runs three rounds meanwhile: the stopped one none.
    const after = rounds;
    let other = 0;
    const witness = await startTask(store, {
      rounds: { run: async () => void other++, intervalMs: 10 },
      onError: () => {},
    });
    await vi.waitFor(() => expect(other).toBeGreaterThanOrEqual(3), POLL);
    await witness.stop();
    expect(rounds).toBe(after);
  });

  it('runs one round at a time, and stop() waits for the round under way', async () => {
    const seen: string[] = [];
    let release = () => {};
    let rounds = 0;
    const task = await startTask(store, {
      rounds: {
        run: async () => {
          rounds++;
          seen.push('round started');
          await new Promise<void>((r) => (release = r));
          seen.push('round ended');
        },
        intervalMs: 10,
      },
      onError: () => {},
    });
    await vi.waitFor(() => expect(rounds).toBe(1), POLL);
    // Another task on the same interval runs three rounds meanwhile: the first one's round is still the only one.
    let other = 0;
    const witness = await startTask(store, {
      rounds: { run: async () => void other++, intervalMs: 10 },
      onError: () => {},
    });
    await vi.waitFor(() => expect(other).toBeGreaterThanOrEqual(3), POLL);
    await witness.stop();
    expect(rounds).toBe(1);

    const stopped = task.stop().then(() => seen.push('stopped'));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['round started']);
    release();
    await stopped;
    expect(seen).toEqual(['round started', 'round ended', 'stopped']);
    expect(rounds).toBe(1);
  });

  it(
    kind === 'postgres' ? 'LISTENs on its channels until stop()' : 'does not LISTEN (the embedded store has none)',
    async () => {
      const payloads: string[] = [];
      let listens = 0;
      const task = await startTask(store, {
        listens: [{ channel: CHANNELS.reviews, onPayload: (p) => payloads.push(p), onListen: () => void listens++ }],
        onError: () => {},
      });
      if (kind === 'embedded') {
        expect(store.supportsListen).toBe(false);
        await task.stop();
        expect(listens).toBe(0);
        return;
      }
      expect(listens).toBe(1);
      await notify(store.sql, CHANNELS.reviews, 'before stop');
      await vi.waitFor(() => expect(payloads).toEqual(['before stop']), POLL);
      await task.stop();

      // A task still listening on the channel receives the next NOTIFY: the stopped one does not.
      const witness: string[] = [];
      const other = await startTask(store, {
        listens: [{ channel: CHANNELS.reviews, onPayload: (p) => witness.push(p) }],
        onError: () => {},
      });
      await notify(store.sql, CHANNELS.reviews, 'after stop');
      await vi.waitFor(() => expect(witness).toEqual(['after stop']), POLL);
      await other.stop();
      expect(payloads).toEqual(['before stop']);
    },
  );
});
