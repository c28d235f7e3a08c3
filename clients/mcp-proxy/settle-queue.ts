/**
 * The confirms and rejects of `authz mcp-proxy`, sent together (issue 30,
 * "One round trip"): a confirm goes out after the upstream's answer has gone
 * to the client, but an agent's next call follows at once, and a confirm in
 * flight at the service (its transaction and commit, and the proxy's own work
 * sending it) slowed the next call's decision (bench/mcp: 3.54 ms instead of
 * 2.19 ms at p50). So a settle waits up to `windowMs` for others and they go
 * out at once: most decisions then have no confirm beside them, and the
 * service commits a batch of confirms together.
 *
 * Each settle is still one `POST /v1/decisions/:id/confirm` (or `/reject`)
 * sent by the client library, with its retries under one idempotency key; a
 * failure after the retries is the caller's to log. `flush()` sends what waits
 * at once (a session or the proxy ending); an unconfirmed decision expires as
 * any other.
 */

export type SettleVerb = 'confirm' | 'reject';

export interface SettleQueueOptions {
  /** Sends one confirm or reject (the client library retries it) and never rejects. */
  send: (id: string, verb: SettleVerb) => Promise<void>;
  /** How long a settle waits for others to go out with it, in ms (0: at once). */
  windowMs: number;
  /** Most settles waiting: one more sends them all at once. */
  maxBatch: number;
}

/** Default window of the proxy: short beside any decision's time-to-live. */
export const SETTLE_WINDOW_MS = 20;
/** Default most settles sent in one batch. */
export const SETTLE_MAX_BATCH = 64;

interface Waiting {
  id: string;
  verb: SettleVerb;
  done: () => void;
}

/**
 * Settles sent in batches.
 *
 * @example
 * ```ts
 * const queue = new SettleQueue({ send: (id, verb) => confirmOrReject(id, verb), windowMs: 20, maxBatch: 64 });
 * await queue.add('dec_1', 'confirm'); // sent within 20 ms, with the others waiting then
 * ```
 */
export class SettleQueue {
  readonly #o: SettleQueueOptions;
  #waiting: Waiting[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** Settles sent: how many, and in how many batches (for the operator's figures and tests). */
  readonly stats = { sent: 0, batches: 0 };

  constructor(options: SettleQueueOptions) {
    this.#o = options;
  }

  /** Queues one settle; resolves once it has been sent and answered (or has failed, as `send` reports). */
  add(id: string, verb: SettleVerb): Promise<void> {
    return new Promise<void>((done) => {
      this.#waiting.push({ id, verb, done });
      if (this.#o.windowMs <= 0 || this.#waiting.length >= this.#o.maxBatch) this.flush();
      else if (this.#timer === undefined) {
        this.#timer = setTimeout(() => this.flush(), this.#o.windowMs);
        // The proxy's stop flushes: a waiting settle does not keep the process alive by itself.
        this.#timer.unref();
      }
    });
  }

  /** Settles waiting now. */
  get pending(): number {
    return this.#waiting.length;
  }

  /** Sends every waiting settle now. */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#waiting;
    if (batch.length === 0) return;
    this.#waiting = [];
    this.stats.batches++;
    this.stats.sent += batch.length;
    for (const w of batch) void this.#o.send(w.id, w.verb).finally(w.done);
  }
}
