/**
 * The confirm half of the load that test/runtime/crash-recovery.test.ts and
 * the failover drill (test/helpers/failover-drill.ts) put on a real
 * `authz serve`: workers take allowed charges from a queue the decision
 * workers fill and confirm about two thirds of them (every third is left
 * pending), every other confirmed one for one less than was held; a charge
 * queued again after a 503 (`retried`) is confirmed again with the amount of
 * its first attempt. What an answer means is the caller's (`onReply`).
 */
import type { Reply } from './server-process.js';

/** An allowed charge: the decision's id and the amount it held (null: none). */
export interface Confirmable {
  id: string;
  amount: number | null;
}

/** A queued charge; `retried` with `confirmAmount` when it is the same confirm sent again. */
export type QueuedConfirm<T extends Confirmable> = T & { retried?: boolean; confirmAmount?: number | null };

export interface ConfirmLoadOptions<T extends Confirmable> {
  /** Filled by the decision workers; a retry is pushed back onto it by `onReply`. */
  queue: Array<QueuedConfirm<T>>;
  /** The workers end when this says so (checked before each queued charge). */
  stopped: () => boolean;
  /** The service's API with the environment's key (test/helpers/server-process.ts `request`). */
  api: (method: string, path: string, body?: unknown) => Promise<Reply>;
  /** Judges an answer: records the confirm, counts a failure or queues a retry. `amount`: what was sent (null: none). */
  onReply: (charge: QueuedConfirm<T>, amount: number | null, reply: Reply) => void;
  /** A confirm that got no HTTP answer (the worker then waits 20 ms and goes on). */
  onTransportError: () => void;
}

/**
 * A confirm worker: call it once per concurrent worker; the workers share one
 * sequence (which charges are left pending or confirmed for less), so the mix
 * is the same whatever their number.
 *
 * @example
 * const confirmWorker = confirmLoad({ queue, stopped: () => stop, api, onReply: (d, amount, r) => r.status === 200 && confirmed.set(d.id, amount), onTransportError: () => errors++ });
 * const workers = [confirmWorker(), confirmWorker()];
 */
export function confirmLoad<T extends Confirmable>(options: ConfirmLoadOptions<T>): () => Promise<void> {
  const { queue, stopped, api, onReply, onTransportError } = options;
  let seq = 0;
  return async () => {
    while (!stopped()) {
      const charge = queue.shift();
      if (!charge) {
        await sleep(5);
        continue;
      }
      let amount: number | null;
      if (charge.retried) amount = charge.confirmAmount ?? null;
      else {
        const n = seq++;
        if (n % 3 === 2) continue; // a third left pending
        amount = n % 3 === 1 && charge.amount !== null && charge.amount > 1 ? charge.amount - 1 : null;
      }
      try {
        const reply = await api('POST', `/v1/decisions/${charge.id}/confirm`, amount === null ? {} : { amount });
        onReply(charge, amount, reply);
      } catch {
        onTransportError();
        await sleep(20);
      }
    }
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
