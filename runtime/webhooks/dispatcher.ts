/**
 * The webhook dispatcher of one server process. It claims due deliveries from
 * the store (FOR UPDATE SKIP LOCKED: several processes share the work and never
 * send the same attempt at once), POSTs each event's envelope signed with its
 * endpoint's secret, and records the attempts in batches (group commit). A
 * failed attempt is retried on the schedule of docs/webhooks-and-events.md#delivery, measured from the attempt;
 * after the last one the delivery is abandoned.
 *
 * Endpoints registered with `standard_webhooks` also get the Standard Webhooks
 * headers (standard-webhooks.ts), timestamped with the service clock at the
 * attempt.
 *
 * At most `perEndpoint` attempts per endpoint are in flight (a slow or dead
 * endpoint holds only its own slots), claimed a few rounds ahead. Due times follow
 * the service clock; claims are leased in real time, so a process killed
 * mid-delivery leaves the attempt to another one once the lease runs out (at
 * least once, with the same event id).
 */
import type { Clock } from '../clock.js';
import { GroupCommit } from '../shared/group-commit.js';
import { envelope } from '../presenters/event.js';
import { openText } from '../secrets/sealed-text.js';
import type { Sql } from '../store/connect.js';
import type { DeliveryObserver } from '../metrics/service-metrics.js';
import { retryTransient } from '../store/transient.js';
import { eventBodies } from '../events/references.js';
import {
  claimDueDeliveries,
  recordAttempts,
  releaseClaims,
  type AttemptResult,
  type ClaimedDelivery,
} from '../store/webhooks.js';
import { nextAttemptAfterFailure } from './schedule.js';
import { sendWebhook, STOPPED } from './send.js';
import { signWebhookBody } from './signature.js';
import { signStandardWebhook } from './standard-webhooks.js';

/** Deliveries claimed ahead per in-flight slot. */
const CLAIM_AHEAD = 4;

/** A claimed delivery with its event's body. */
type ReadyDelivery = ClaimedDelivery & { event_data: Record<string, unknown> };

interface EndpointQueue {
  queue: ReadyDelivery[];
  active: number;
}

export interface DispatcherOptions {
  allowPrivate: boolean;
  masterKey?: string;
  maxInFlight?: number;
  perEndpoint?: number;
  /** Pause between claims when nothing was due. */
  idleMs?: number;
  timeoutMs?: number;
  /** How long a claim is owned (real time) before another dispatcher may take the attempt over. */
  leaseSeconds?: number;
  onError?: (error: unknown) => void;
  /** Told each attempt's outcome (metrics). */
  observer?: DeliveryObserver;
  /**
   * How long `stop` lets the attempts in flight run before cutting them off
   * (default 2000 ms); a cut attempt is given back, not recorded: the next
   * dispatcher makes it again (at least once).
   */
  stopGraceMs?: number;
}

export class WebhookDispatcher {
  private readonly maxInFlight: number;
  private readonly perEndpoint: number;
  private readonly idleMs: number;
  private readonly timeoutMs: number;
  private readonly endpoints = new Map<string, EndpointQueue>();
  /** Claimed and not yet recorded (queued or in flight). */
  private queued = 0;
  private readonly maxQueued: number;
  private readonly sends = new Set<Promise<void>>();
  private readonly recording = new Set<Promise<void>>();
  private readonly records: GroupCommit<AttemptResult, undefined>;
  /** Attempts this dispatcher has made (observability, tests). */
  attemptsMade = 0;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  /** Aborted by `stop` once its grace is over: the attempts still in flight are cut off. */
  private cut = new AbortController();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly options: DispatcherOptions,
  ) {
    this.maxInFlight = options.maxInFlight ?? 256;
    this.maxQueued = this.maxInFlight * CLAIM_AHEAD;
    this.perEndpoint = options.perEndpoint ?? 32;
    this.idleMs = options.idleMs ?? 200;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    // Every store call is retried in-process on a transient failure (p-retry): an
    // attempt whose record were lost would be sent again once its lease ran out.
    this.records = new GroupCommit(
      async (results) => {
        await retryTransient(() => recordAttempts(sql, results), { onRetry: this.options.onError });
        return results.map(() => undefined);
      },
      500,
      2,
    );
  }

  start(onError?: (error: unknown) => void): void {
    if (this.running) return;
    if (onError) this.options.onError = onError;
    this.running = true;
    this.cut = new AbortController();
    this.loopDone = this.loop();
  }

  /**
   * Stops claiming, gives back what was claimed but not sent, waits for the
   * attempts in flight (at most `stopGraceMs`: then they are cut off and given
   * back) and their records.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loopDone;
    const unsent: ReadyDelivery[] = [];
    for (const e of this.endpoints.values()) unsent.push(...e.queue.splice(0));
    this.queued -= unsent.length;
    try {
      const claims = unsent.map((d) => ({ id: d.id, attempt: d.attempt }));
      await retryTransient(() => releaseClaims(this.sql, claims), { onRetry: this.options.onError });
    } catch (error) {
      // Their leases run out instead.
      this.options.onError?.(error);
    }
    const cut = setTimeout(() => this.cut.abort(), this.options.stopGraceMs ?? 2000);
    try {
      await this.drain();
    } finally {
      clearTimeout(cut);
    }
  }

  /** Claims what is due now and waits until those attempts are sent and recorded; returns how many (tests). */
  async runOnce(): Promise<number> {
    const n = await this.claimAndSend();
    await this.drain();
    return n;
  }

  private async drain(): Promise<void> {
    while (this.sends.size > 0 || this.queued > 0) await Promise.all([...this.sends]);
    while (this.recording.size > 0) await Promise.all([...this.recording]);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      try {
        claimed = await this.claimAndSend();
      } catch (error) {
        this.options.onError?.(error);
      }
      if (claimed === 0 || this.queued >= this.maxQueued) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.idleMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = null;
      }
    }
  }

  /**
   * Claims up to `claimAhead` x `perEndpoint` deliveries of an endpoint at once
   * (fewer store round trips) and queues them locally; at most `perEndpoint` of
   * an endpoint are in flight. Endpoints with a full local queue are not claimed
   * for, so a slow endpoint's backlog stays in the store, where other processes
   * can take it.
   */
  private async claimAndSend(): Promise<number> {
    const free = this.maxQueued - this.queued;
    if (free <= 0) return 0;
    const busy = [...this.endpoints]
      .filter(([, e]) => e.queue.length + e.active >= this.perEndpoint * CLAIM_AHEAD)
      .map(([id]) => id);
    const claimed = await retryTransient(
      () =>
        claimDueDeliveries(
          this.sql,
          this.clock.now(),
          free,
          this.perEndpoint * CLAIM_AHEAD,
          busy,
          this.options.leaseSeconds ?? 60,
        ),
      {
        onRetry: this.options.onError,
      },
    );
    // Decision events stored by reference get their bodies from their decisions (one query, none when there are none).
    const bodies = await retryTransient(
      () =>
        eventBodies(
          this.sql,
          claimed.map((c) => ({
            account_id: c.account_id,
            environment: c.environment,
            data: c.event_data,
            decision_id: c.decision_id,
          })),
        ),
      { onRetry: this.options.onError },
    );
    for (const [i, claim] of claimed.entries()) {
      const delivery: ReadyDelivery = { ...claim, event_data: bodies[i]! };
      let e = this.endpoints.get(delivery.endpoint_id);
      if (!e) {
        e = { queue: [], active: 0 };
        this.endpoints.set(delivery.endpoint_id, e);
      }
      e.queue.push(delivery);
      this.queued++;
      this.pump(delivery.endpoint_id, e);
    }
    return claimed.length;
  }

  private pump(endpointId: string, e: EndpointQueue): void {
    while (e.active < this.perEndpoint && e.queue.length > 0) {
      const delivery = e.queue.shift()!;
      e.active++;
      const send = this.attempt(delivery).finally(() => {
        this.sends.delete(send);
        this.queued--;
        e.active--;
        if (e.active === 0 && e.queue.length === 0) this.endpoints.delete(endpointId);
        else this.pump(endpointId, e);
        // Room in the queue: claim more at once.
        this.wake?.();
      });
      this.sends.add(send);
    }
  }

  private async attempt(delivery: ReadyDelivery): Promise<void> {
    this.attemptsMade++;
    const startedMs = this.clock.now();
    let result: { status_code: number | null; error: string | null; duration_ms: number };
    try {
      const body = Buffer.from(
        JSON.stringify(
          envelope({
            id: delivery.event_id,
            account_id: delivery.account_id,
            environment: delivery.environment,
            type: delivery.event_type,
            created_at: delivery.event_created_at,
            data: delivery.event_data,
          }),
        ),
      );
      const secret = openText(
        delivery.secret,
        delivery.secret_encrypted,
        this.options.masterKey,
        'the webhook secrets',
      );
      const headers: Record<string, string> = {
        'x-service-signature': signWebhookBody(body, secret),
        'x-service-event-id': delivery.event_id,
        'x-service-delivery-attempt': String(delivery.attempt),
      };
      if (delivery.standard_webhooks) {
        // The service clock at this attempt: a receiver refuses it once it is old (a replay).
        const timestamp = Math.floor(startedMs / 1000);
        headers['webhook-id'] = delivery.event_id;
        headers['webhook-timestamp'] = String(timestamp);
        headers['webhook-signature'] = signStandardWebhook(delivery.event_id, timestamp, body, secret);
      }
      const rules = { environment: delivery.environment, allowPrivate: this.options.allowPrivate };
      result = await sendWebhook(delivery.url, body, headers, rules, this.timeoutMs, undefined, this.cut.signal);
    } catch (error) {
      result = { status_code: null, error: error instanceof Error ? error.message : String(error), duration_ms: 0 };
    }
    const ok =
      result.error === null && result.status_code !== null && result.status_code >= 200 && result.status_code < 300;
    if (!ok && result.error === STOPPED) {
      // Cut off by stop: given back as if never claimed (not a failed attempt); else its lease runs out.
      await retryTransient(() => releaseClaims(this.sql, [{ id: delivery.id, attempt: delivery.attempt }]), {
        onRetry: this.options.onError,
      }).catch((e: unknown) => this.options.onError?.(e));
      return;
    }
    const next = ok ? null : nextAttemptAfterFailure(delivery.attempt, startedMs);
    this.options.observer?.attempt(
      ok ? 'succeeded' : next === null ? 'abandoned' : 'failed',
      ok ? (this.clock.now() - delivery.event_created_at.getTime()) / 1000 : null,
    );
    // The endpoint's slot is free once it answered; the record follows in the next batch.
    const record = this.record({
      delivery_id: delivery.id,
      attempt: delivery.attempt,
      started_at: new Date(startedMs),
      status_code: result.status_code,
      error: result.error ?? (ok ? null : `HTTP ${result.status_code}`),
      duration_ms: result.duration_ms,
      ok,
      next_attempt_at: next === null ? null : new Date(next),
    });
    this.recording.add(record);
    void record.finally(() => this.recording.delete(record));
  }

  private async record(result: AttemptResult): Promise<void> {
    try {
      await this.records.submit(result);
    } catch (error) {
      // Unrecorded, the lease runs out and the attempt is made again: at least once.
      this.options.onError?.(error);
    }
  }
}
