/**
 * The registry of requests waiting for a review (runtime/domain/review-waiters.ts):
 * a wake reaches every waiter of its decision and no other, all with the same
 * wake object (so they can share one read), a waiter woken before it waits
 * returns at once, time running out or an abort answers null, and cancelled or
 * answered waiters leave nothing behind.
 */
import { describe, expect, it } from 'vitest';
import { ReviewWaiters, waiterKey } from '../../../runtime/domain/review-waiters.js';

const key = (decisionId: string) => waiterKey({ accountId: 'acc_1', environment: 'test', decisionId });

describe('review waiters', () => {
  it('wakes every waiter of the decision with one shared wake, and no other', async () => {
    const waiters = new ReviewWaiters();
    const a = waiters.register(key('dec_1'));
    const b = waiters.register(key('dec_1'));
    const other = waiters.register(key('dec_2'));
    const otherTenant = waiters.register(waiterKey({ accountId: 'acc_2', environment: 'test', decisionId: 'dec_1' }));
    expect(waiters.size).toBe(4);
    const pending = [a.wait(60_000), b.wait(60_000)];
    expect(waiters.wake(key('dec_1'))).toBe(2);
    const [wa, wb] = await Promise.all(pending);
    expect(wa).not.toBeNull();
    expect(wa).toBe(wb);
    expect(waiters.size).toBe(2);
    // Woken before it waited: at once, with a wake of its own call.
    expect(waiters.wake(key('dec_2'))).toBe(1);
    const late = await other.wait(60_000);
    expect(late).not.toBeNull();
    expect(late).not.toBe(wa);
    for (const w of [a, b, other, otherTenant]) w.cancel();
    expect(waiters.size).toBe(0);
    expect(waiters.wake(key('dec_1'))).toBe(0);
  });

  it('answers null when the time runs out or the request is aborted', async () => {
    const waiters = new ReviewWaiters();
    const w = waiters.register(key('dec_3'));
    expect(await w.wait(5)).toBeNull();
    const aborted = new AbortController();
    const held = w.wait(60_000, aborted.signal);
    aborted.abort();
    expect(await held).toBeNull();
    const already = new AbortController();
    already.abort();
    expect(await w.wait(60_000, already.signal)).toBeNull();
    w.cancel();
    expect(waiters.size).toBe(0);
  });

  it("wakeAll wakes every decision's waiters", async () => {
    const waiters = new ReviewWaiters();
    const ws = ['dec_a', 'dec_b', 'dec_c'].map((d) => waiters.register(key(d)));
    const held = Promise.all(ws.map((w) => w.wait(60_000)));
    expect(waiters.wakeAll()).toBe(3);
    expect((await held).every((x) => x !== null)).toBe(true);
    expect(waiters.size).toBe(0);
  });
});
