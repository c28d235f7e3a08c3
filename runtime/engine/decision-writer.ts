/**
 * Group commit for decisions: every decision is stored durably before its
 * response is sent, but concurrent decisions share one statement. While one batch
 * is being written, new decisions queue; when it completes, the next batch takes
 * everything queued (up to `maxBatch`). Under load the batch grows with the
 * concurrency; alone, a decision waits only for its own write.
 */
import type { Sql } from '../store/connect.js';
import { writeDecisionBatch, type DecisionRow, type NewAgent } from '../store/decisions.js';

export interface PendingWrite {
  /** Stored with its decision.* event (built from the row by the store). */
  decision: DecisionRow;
  /** Set when the agent was not known to be in the store. */
  newAgent?: NewAgent;
}

interface Queued {
  write: PendingWrite;
  resolve: (registered: boolean) => void;
  reject: (error: unknown) => void;
}

export class DecisionWriter {
  private queue: Queued[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idleWaiters: Array<() => void> = [];

  /**
   * `maxInFlight` batches may be written at once (PostgreSQL: several pooled
   * connections hide each commit's latency; the embedded store has one).
   */
  constructor(
    private readonly sql: Sql,
    private readonly maxBatch = 500,
    private readonly maxInFlight = 1,
  ) {}

  /** Resolves once stored, with whether this write registered its agent. */
  write(write: PendingWrite): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      this.schedule();
    });
  }

  /** Waits until everything queued so far is stored. */
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
      while (this.queue.length > 0 && this.inFlight < this.maxInFlight) void this.flush(this.queue.splice(0, this.maxBatch));
    });
  }

  private async flush(batch: Queued[]): Promise<void> {
    this.inFlight++;
    try {
      const agents = new Map<string, NewAgent>();
      for (const q of batch) {
        const a = q.write.newAgent;
        if (a) agents.set(`${a.account_id}:${a.environment}:${a.agent_id}`, a);
      }
      const registered = await writeDecisionBatch(
        this.sql,
        batch.map((q) => q.write.decision),
        [...agents.values()],
      );
      // The first decision of the batch for a newly registered agent owns the registration.
      for (const q of batch) {
        const a = q.write.newAgent;
        const key = a && `${a.account_id}:${a.environment}:${a.agent_id}`;
        q.resolve(key !== undefined && registered.delete(key));
      }
    } catch (error) {
      // One bad row must not fail its neighbours: write them one by one.
      if (batch.length === 1) batch[0]!.reject(error);
      else for (const q of batch) await this.flush([q]);
    } finally {
      this.inFlight--;
      if (this.queue.length > 0) this.schedule();
      else if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }
}
