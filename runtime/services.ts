/** What route plugins use: built once per app from the store and the clock. */
import type { Config } from './config.js';
import type { Clock } from './clock.js';
import { systemClock, type AdjustableClock } from './clock.js';
import { ApiKeyCache } from './auth/key-cache.js';
import { AgentDirectory } from './domain/agent-directory.js';
import { DecisionWriter } from './domain/decision-writer.js';
import { DecisionService } from './domain/decisions.js';
import { PolicySets } from './domain/policy-sets.js';
import type { PermitIssuer } from './domain/decision-ports.js';
import { History } from './history/history.js';
import { HistoryLeases } from './history/leases.js';
import { Limits } from './spend-limits/limits.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { SecurityAlerts } from './alerts/security-alerts.js';
import { ringPermitIssuer } from './permits/issuer.js';
import { KeyRing } from './permits/key-ring.js';
import { sharedSignWorker } from './permits/sign-worker.js';
import { ServiceMetrics } from './metrics/service-metrics.js';
import type { Store } from './store/connect.js';
import { NO_TRACING, type Tracing } from './telemetry/tracing.js';
import { AccountService } from './domain/accounts.js';
import { AgentService } from './domain/agents.js';
import { BudgetService } from './domain/budgets.js';
import { BundleService } from './domain/bundles.js';
import { EventService } from './domain/events.js';
import { HealthService } from './domain/health.js';
import { openTestClock } from './domain/clock-offset.js';
import { PermitService } from './domain/permits.js';
import { PolicyService } from './domain/policies.js';
import { WebhookService } from './domain/webhooks.js';
import { AccessRequestService } from './domain/access-requests.js';
import { DecisionOutputService } from './domain/decision-output.js';
import { ApprovalService } from './domain/approvals.js';
import { ReviewService } from './domain/reviews.js';
import { ReviewWaiters } from './domain/review-waiters.js';
import { StatsService } from './domain/stats.js';
import { SessionService } from './domain/session-labels.js';

export interface Services {
  config: Config;
  store: Store;
  clock: Clock;
  /** Present when the server runs with AUTHZ_TEST_CLOCK=1. */
  testClock: AdjustableClock | null;
  /** API keys resolved to their account, environment and scopes, cached (revocations and rolls: background/key-replication.ts). */
  apiKeys: ApiKeyCache;
  /** What this process knows of agents (status, attributes) for decisions; the agents resource is `agents`. */
  agentDirectory: AgentDirectory;
  policySets: PolicySets;
  /** Stores decisions by group commit before their answer is sent. */
  writer: DecisionWriter;
  decisions: DecisionService;
  limits: Limits;
  /** The domain services the routes call, one per resource. */
  policies: PolicyService;
  bundles: BundleService;
  agents: AgentService;
  accounts: AccountService;
  events: EventService;
  budgets: BudgetService;
  health: HealthService;
  permits: PermitService;
  webhooks: WebhookService;
  /** Not started: `authz serve` starts it (tests run it by hand or start it). */
  dispatcher: WebhookDispatcher;
  ring: KeyRing;
  alerts: SecurityAlerts;
  /** Prometheus metrics of this instance (its own registry). */
  metrics: ServiceMetrics;
  /** AUTHZ_OTEL traces, or NO_TRACING. */
  tracing: Tracing;
  /** Signs permit tokens (also a replayed decision's fresh token: runtime/http/idempotency.ts). */
  permitIssuer: PermitIssuer;
  /** Human review: the queue, verdicts, waiting for one, permits after approval. */
  reviews: ReviewService;
  /** What a verdict or an approval timeout changes (the sweep runs its timeOutOverdue). */
  approvals: ApprovalService;
  /** AuthZEN access requests for decisions awaiting approval, and re-evaluations with their approvals. */
  accessRequests: AccessRequestService;
  /** What the MCP gateway read in results (POST /v1/decisions/:id/output). */
  outputs: DecisionOutputService;
  /** This process's requests waiting for a review (woken by NOTIFY authz_reviews: background/reviews.ts). */
  reviewWaiters: ReviewWaiters;
  /** The dashboard's overview figures. */
  stats: StatsService;
  /** Sessions and their labels (what an agent run has read). */
  sessions: SessionService;
}

export interface ServiceOptions {
  config: Config;
  store: Store;
  clock?: Clock;
  /** Replaces the key ring's issuer (tests). */
  permits?: PermitIssuer;
}

/** Opens what needs the store (the signing keys), then builds the services. */
export async function openServices(options: ServiceOptions): Promise<Services> {
  // The test clock starts where it was left (its offset is stored).
  const testClock = options.clock ? null : options.config.testClock ? await openTestClock(options.store.sql) : null;
  const clock = options.clock ?? testClock ?? systemClock;
  const ring = await KeyRing.open(options.store.sql, clock, options.config.masterKey);
  // The OpenTelemetry SDK is loaded only when tracing is on.
  const tracing = options.config.otel ? (await import('./telemetry/otel.js')).startOtel() : NO_TRACING;
  return buildServices({ ...options, clock }, ring, testClock, tracing);
}

function buildServices(
  options: ServiceOptions & { clock: Clock },
  ring: KeyRing,
  testClock: AdjustableClock | null,
  tracing: Tracing,
): Services {
  const { config, store, clock } = options;
  const sql = store.sql;
  const agentDirectory = new AgentDirectory(sql, clock);
  const policySets = new PolicySets(sql, clock);
  const metrics = new ServiceMetrics(sql, clock);
  const inFlight = store.kind === 'postgres' ? 4 : 1;
  const writer = new DecisionWriter(sql, config.decisionBatchSize, inFlight, metrics.storeBatch('decisions'));
  const alerts = new SecurityAlerts(sql, clock, config.alerts);
  const limits = new Limits(sql, clock, {
    keyRateLimit: config.keyRateLimit,
    maxInFlight: inFlight,
    observeBatch: metrics.storeBatch('limits'),
  });
  const permitIssuer =
    options.permits ?? ringPermitIssuer(ring, config.baseUrl, config.signWorker ? sharedSignWorker() : undefined);
  const apiKeys = new ApiKeyCache(sql, clock);
  const reviewWaiters = new ReviewWaiters();
  const sessions = new SessionService(sql, clock, config.sessionIdleHours);
  const approvals = new ApprovalService({ sql, clock, limits, policySets, waiters: reviewWaiters, sessions });
  const decisions = new DecisionService({
    sql,
    clock,
    policySets,
    agents: agentDirectory,
    writer,
    limits,
    alerts,
    permits: permitIssuer,
    approvals,
    sessions,
    redact: config.redactContext,
    tracing,
    shadowDiverged: (policyId) => metrics.shadowDiverged(policyId),
    history: new History(sql, config.historyLeases ? new HistoryLeases(sql) : null),
    retentionDays: config.retentionDays,
  });
  const budgets = new BudgetService({ sql, clock, policySets });
  return {
    config,
    store,
    clock,
    testClock,
    apiKeys,
    agentDirectory,
    policySets,
    writer,
    decisions,
    limits,
    policies: new PolicyService(sql, clock, policySets, config),
    bundles: new BundleService(sql, clock, policySets, config),
    agents: new AgentService(sql, clock, agentDirectory),
    accounts: new AccountService(sql, clock, apiKeys),
    events: new EventService(sql),
    budgets,
    health: new HealthService(store),
    permits: new PermitService({ ring, clock, alerts, baseUrl: config.baseUrl, sql, policySets }),
    webhooks: new WebhookService(sql, clock, {
      allowPrivate: config.webhookAllowPrivate,
      ...(config.masterKey ? { masterKey: config.masterKey } : {}),
    }),
    dispatcher: new WebhookDispatcher(sql, clock, {
      allowPrivate: config.webhookAllowPrivate,
      leaseSeconds: config.webhookLeaseSeconds,
      observer: metrics,
      ...(config.masterKey ? { masterKey: config.masterKey } : {}),
    }),
    ring,
    alerts,
    metrics,
    permitIssuer,
    tracing,
    reviews: new ReviewService({ sql, clock, decisions, approvals, waiters: reviewWaiters, permits: permitIssuer }),
    approvals,
    accessRequests: new AccessRequestService({
      sql,
      clock,
      decisions,
      permits: permitIssuer,
      policySets,
      redact: config.redactContext,
    }),
    outputs: new DecisionOutputService({
      sql,
      clock,
      sessionLabels: (tx, _principal, decision, labels) => sessions.addGatewayLabels(tx, decision, labels),
    }),
    reviewWaiters,
    stats: new StatsService({ sql, clock, budgets }),
    sessions,
  };
}
