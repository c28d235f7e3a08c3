/**
 * Group commit: callers submit items one at a time; items submitted while a batch
 * is being written wait and go together in the next one (up to `maxBatch`), so
 * the store sees one statement per batch instead of one per request. Under load a
 * batch grows with the concurrency; alone, an item waits only for its own write.
 * A failed batch is retried item by item, so one bad item fails only itself.
 */
export type BatchRunner<I, O> = (items: I[]) => Promise<O[]>;

/** Told of every batch written: its size and its store round trip (seconds, until this process took up the answer). */
export type BatchObserver = (size: number, seconds: number) => void;

interface Queued<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<I, O> {
  private queue: Queued<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idleWaiters: Array<() => void> = [];

  /** `maxInFlight` batches may run at once (pooled PostgreSQL connections hide each one's latency). */
  constructor(
    private readonly run: BatchRunner<I, O>,
    private readonly maxBatch = 500,
    private readonly maxInFlight = 1,
    private readonly observe: BatchObserver | null = null,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once everything submitted so far is done. */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    // Let the current tick's requests join the batch.
    setImmediate(() => {
      this.scheduled = false;
      while (this.queue.length > 0 && this.inFlight < this.maxInFlight)
        void this.flush(this.queue.splice(0, this.maxBatch));
    });
  }

  private async flush(batch: Queued<I, O>[]): Promise<void> {
    this.inFlight++;
    try {
      const started = this.observe ? performance.now() : 0;
      const out = await this.run(batch.map((q) => q.item));
      this.observe?.(batch.length, (performance.now() - started) / 1000);
      batch.forEach((q, i) => q.resolve(out[i]!));
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else for (const q of batch) await this.flush([q]);
    } finally {
      this.inFlight--;
      if (this.queue.length > 0) this.schedule();
      else if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }
}
