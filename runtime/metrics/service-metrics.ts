/**
 * Prometheus metrics of one service instance, in a registry of its own (several
 * apps in one process, as in tests, never share series): the process's default
 * metrics, decisions by effect and reason, decision latency, webhook deliveries
 * by outcome and their lag, and budget usage (set at scrape time from one store
 * query, labelled per policy and unit: never per agent).
 *
 * The decision path's cost is two Map lookups, the increment of a plain number
 * (one slot per effect and reason, made once; prom-client reads them at scrape
 * time, so no label hashing per request) and one unlabelled histogram
 * observation; each store batch (group commit) two more.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Clock } from '../clock.js';
import type { SqlOrTx } from '../store/connect.js';
import { currentBudgetTotals } from '../store/budget-totals.js';

/** Seconds: 0.5 ms to 5 s. */
export const DECISION_LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Decisions (or limit checks) written in one store statement: 1 to the largest batch (500 by default). */
export const STORE_BATCH_SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500];
/** The store batches of the decision path: decisions written, and limit checks (authz_apply_limits). */
export type StoreBatch = 'decisions' | 'limits';
/** Seconds from an event's creation to its successful delivery: 50 ms to a day (the retry schedule spans ~24 h). */
export const DELIVERY_LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 28800, 86400];

export type DeliveryOutcome = 'succeeded' | 'failed' | 'abandoned';

/** What the webhook dispatcher reports of each attempt. */
export interface DeliveryObserver {
  /** `lagSeconds`: for a success, from the event's creation to now (service clock). */
  attempt(outcome: DeliveryOutcome, lagSeconds: number | null): void;
}

const BUDGET_LABELS = ['account_id', 'environment', 'policy_id', 'unit', 'period'] as const;

export class ServiceMetrics implements DeliveryObserver {
  readonly registry = new Registry();
  /** Decisions per effect, then reason. */
  private readonly counts = new Map<string, Map<string, { n: number }>>();
  private readonly latency: Histogram;
  private readonly deliveries: Counter<'outcome'>;
  private readonly shadow: Counter<'policy_id'>;
  private readonly deliveryByOutcome: Record<DeliveryOutcome, Counter.Internal>;
  private readonly lag: Histogram;
  private readonly batchSize: Histogram<'batch'>;
  private readonly batchSeconds: Histogram<'batch'>;
  private readonly budget: Record<
    'consumed' | 'held' | 'limit' | 'agents' | 'maxUtilization',
    Gauge<(typeof BUDGET_LABELS)[number]>
  >;

  constructor(
    private readonly sql: SqlOrTx,
    private readonly clock: Clock,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const counts = this.counts;
    new Counter({
      name: 'authz_decisions_total',
      help: 'Decisions made, by effect and reason.',
      labelNames: ['effect', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const [effect, byReason] of counts) for (const [reason, c] of byReason) this.inc({ effect, reason }, c.n);
      },
    });
    // The common outcomes exist (at 0) from the start.
    for (const [effect, reason] of [
      ['allow', 'policy.matched'],
      ['review', 'policy.matched'],
      ['deny', 'policy.matched'],
      ['deny', 'policy.not_found'],
      ['deny', 'policy.disabled'],
      ['deny', 'resource.not_allowed'],
      ['deny', 'budget.exceeded'],
      ['deny', 'agent.revoked'],
    ] as const) {
      this.slot(effect, reason);
    }
    this.latency = new Histogram({
      name: 'authz_decision_duration_seconds',
      help: 'Time to decide POST /v1/decisions, from the handler to the stored decision (seconds).',
      buckets: DECISION_LATENCY_BUCKETS,
      registers,
    });
    this.deliveries = new Counter({
      name: 'authz_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome: succeeded, failed (retry scheduled), abandoned (last attempt failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.deliveryByOutcome = {
      succeeded: this.deliveries.labels('succeeded'),
      failed: this.deliveries.labels('failed'),
      abandoned: this.deliveries.labels('abandoned'),
    };
    for (const c of Object.values(this.deliveryByOutcome)) c.inc(0);
    this.lag = new Histogram({
      name: 'authz_webhook_delivery_lag_seconds',
      help: "From an event's creation to its successful delivery (service clock, seconds).",
      buckets: DELIVERY_LAG_BUCKETS,
      registers,
    });
    this.batchSize = new Histogram({
      name: 'authz_store_batch_size',
      help: 'Items per store statement of the decision path (group commit), by batch: decisions (written) or limits (authz_apply_limits checks).',
      labelNames: ['batch'],
      buckets: STORE_BATCH_SIZE_BUCKETS,
      registers,
    });
    this.batchSeconds = new Histogram({
      name: 'authz_store_batch_duration_seconds',
      help: 'A store statement of the decision path, from sending it until this process took up the answer, by batch (seconds).',
      labelNames: ['batch'],
      buckets: DECISION_LATENCY_BUCKETS,
      registers,
    });
    this.shadow = new Counter({
      name: 'authz_shadow_divergences_total',
      help: 'Decisions whose outcome with the shadow policies enabled differs, by the winning policy then (none: no policy).',
      labelNames: ['policy_id'],
      registers,
    });
    const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: BUDGET_LABELS, registers });
    this.budget = {
      consumed: gauge('authz_budget_consumed', 'Budget consumed this period, summed over agents.'),
      held: gauge('authz_budget_held', 'Fiat amounts held by pending decisions this period, summed over agents.'),
      limit: gauge('authz_budget_limit', "The policy's budget limit (per agent)."),
      agents: gauge('authz_budget_agents', 'Agents with accounting under the budget this period.'),
      maxUtilization: gauge(
        'authz_budget_max_utilization',
        'Highest consumed / limit of any one agent this period (1 = exhausted).',
      ),
    };
  }

  private slot(effect: string, reason: string): { n: number } {
    let byReason = this.counts.get(effect);
    if (!byReason) this.counts.set(effect, (byReason = new Map()));
    let c = byReason.get(reason);
    if (!c) byReason.set(reason, (c = { n: 0 }));
    return c;
  }

  /** The observer of one kind of store batch (group commit): two histogram observations per batch, none per decision. */
  storeBatch(batch: StoreBatch): (size: number, seconds: number) => void {
    const size = this.batchSize.labels(batch);
    const duration = this.batchSeconds.labels(batch);
    return (n, seconds) => {
      size.observe(n);
      duration.observe(seconds);
    };
  }

  /** A decision whose outcome with the shadow policies enabled differs (by the shadow winner). */
  shadowDiverged(policyId: string | null): void {
    this.shadow.labels(policyId ?? 'none').inc();
  }

  /** A decision was made (and stored) in `seconds`. */
  decided(effect: string, reason: string, seconds: number): void {
    (this.counts.get(effect)?.get(reason) ?? this.slot(effect, reason)).n++;
    this.latency.observe(seconds);
  }

  attempt(outcome: DeliveryOutcome, lagSeconds: number | null): void {
    this.deliveryByOutcome[outcome].inc();
    if (outcome === 'succeeded' && lagSeconds !== null) this.lag.observe(Math.max(0, lagSeconds));
  }

  /** The text exposition, budget gauges read from the store first (one query). */
  async scrape(): Promise<{ contentType: string; body: string }> {
    const totals = await currentBudgetTotals(this.sql, this.clock.now());
    for (const g of Object.values(this.budget)) g.reset();
    for (const t of totals) {
      const labels = {
        account_id: t.account_id,
        environment: t.environment,
        policy_id: t.policy_id,
        unit: t.unit,
        period: t.period,
      };
      this.budget.consumed.set(labels, t.consumed);
      this.budget.held.set(labels, t.held);
      this.budget.limit.set(labels, t.limit);
      this.budget.agents.set(labels, t.agents);
      this.budget.maxUtilization.set(labels, t.max_utilization);
    }
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
