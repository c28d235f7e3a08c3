/** Configuration from the environment (docs/operations.md#start-up-and-configuration). */
import { resolve } from 'node:path';
import { DEFAULT_ALERT_THRESHOLDS, type AlertThresholds } from './alerts/security-alerts.js';
import { parseRedactionPaths, type RedactionPath } from './shared/redact.js';

export interface Config {
  port: number;
  host: string;
  databaseUrl?: string;
  dataDir: string;
  adminToken?: string;
  testClock: boolean;
  /** Base URL of this service: the permit tokens' `iss`. */
  baseUrl: string;
  /** Group commit: most decisions written in one statement. */
  decisionBatchSize: number;
  /** Platform rate limit: requests per second per API key (0: off). */
  keyRateLimit: number;
  /** AUTHZ_WEBHOOK_ALLOW_PRIVATE=1: webhook URLs may resolve to loopback and private addresses (operators on private networks). */
  webhookAllowPrivate: boolean;
  /** AUTHZ_MAX_POLICIES: most policies in one environment (POST /v1/policies and PUT /v1/bundle beyond it: 400 validation.too_many_policies). */
  maxPolicies: number;
  /** AUTHZ_DECISION_DEADLINE_MS: POST /v1/decisions answers 503 service.unavailable when the store has not answered by then. */
  decisionDeadlineMs: number;
  /** AUTHZ_WEBHOOK_LEASE_SECONDS: how long a dispatcher owns a claimed delivery (real time) before another may retry it. */
  webhookLeaseSeconds: number;
  /** AUTHZ_BUDGET_SWEEP_SECONDS: how often a process releases expired budget holds and reloads exhausted budgets (others' arrive by NOTIFY at once). */
  budgetSweepSeconds: number;
  /** AUTHZ_SESSION_IDLE_HOURS (default 24): a session (its labels) ends after this many hours without a decision or a label. */
  sessionIdleHours: number;
  /** security.alert thresholds and windows (AUTHZ_ALERT_*). */
  alerts: AlertThresholds;
  /**
   * Seals secrets at rest (AES-256-GCM) when set: AUTHZ_MASTER_KEY here; `authz serve`
   * fills it from the key file when the variable is unset (secrets/master-key.ts).
   */
  masterKey?: string;
  /** AUTHZ_MASTER_KEY_FILE: where `authz serve` reads (or first generates) the master key when AUTHZ_MASTER_KEY is unset. Default `<dataDir>.master-key`. */
  masterKeyFile: string;
  /** AUTHZ_METRICS_TOKEN: GET /metrics needs it as a bearer token; unset, /metrics answers 404. */
  metricsToken?: string;
  /** AUTHZ_REDACT_CONTEXT: context paths never stored (evaluated, then dropped from the stored decision and its events). */
  redactContext: RedactionPath[];
  /** AUTHZ_OTEL=1: traces over OTLP/HTTP (the standard OTEL_* variables configure the exporter). */
  otel: boolean;
  /**
   * AUTHZ_ROLE: what this process does. `all` (default): serves the API and
   * sends webhooks; `api`: serves the API, sends none (dispatcher processes do);
   * `dispatcher`: sends webhooks and answers only the health routes. The split
   * roles need PostgreSQL (several processes on one store).
   */
  role: ProcessRole;
  /** LOG_LEVEL: a pino level for a JSON line per request and more; unset: the quiet default (errors, and a summary of the requests a minute). */
  logLevel?: LogLevel;
  /** AUTHZ_SEED (default 1): the first start on an empty store (embedded or PostgreSQL) creates the default account, its keys and the example policies; `0`: nothing. */
  seed: boolean;
  /** AUTHZ_MAX_CONNECTIONS (default 10,000): most open connections, lowered to the descriptor soft limit - 64 (http/connection-limits.ts). */
  maxConnections: number;
  /** AUTHZ_REQUEST_TIMEOUT_MS (default 10,000): a connection without a complete request for this long is closed. */
  requestTimeoutMs: number;
  /** AUTHZ_RETENTION_DAYS (default 90): days of decisions, events and deliveries kept (whole days dropped after that); null ("0" or "off"): kept forever. */
  retentionDays: number | null;
  /** AUTHZ_SIGN_WORKER=1: permit tokens are signed by a worker thread, a batch per event-loop turn (runtime/permits/sign-worker.ts); default off. */
  signWorker: boolean;
  /** AUTHZ_HISTORY_LEASES=0: every decision's history goes through the limits gate (runtime/history/leases.ts); default on. */
  historyLeases: boolean;
}

export const PROCESS_ROLES = ['all', 'api', 'dispatcher'] as const;

/** The levels LOG_LEVEL takes (pino's). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type ProcessRole = (typeof PROCESS_ROLES)[number];

/** Requests per second per API key unless AUTHZ_KEY_RATE_LIMIT says otherwise. */
export const DEFAULT_KEY_RATE_LIMIT = 1000;

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  return n;
}

function redactionPaths(list: string): RedactionPath[] {
  try {
    return parseRedactionPaths(list);
  } catch (e) {
    throw new ConfigError(`AUTHZ_REDACT_CONTEXT: ${(e as Error).message}`);
  }
}

function processRole(value: string | undefined): ProcessRole {
  if (value === undefined || value === '') return 'all';
  if ((PROCESS_ROLES as readonly string[]).includes(value)) return value as ProcessRole;
  throw new ConfigError(`AUTHZ_ROLE must be one of ${PROCESS_ROLES.join(', ')} (got ${JSON.stringify(value)})`);
}

/** AUTHZ_RETENTION_DAYS: 1 to 36,500 days, or "0" / "off" to keep the log forever. */
function retentionDays(env: NodeJS.ProcessEnv): number | null {
  const raw = env.AUTHZ_RETENTION_DAYS;
  if (raw === 'off' || raw === '0') return null;
  return int(env, 'AUTHZ_RETENTION_DAYS', 90, 1, 36_500);
}

function seedFlag(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === '1') return true;
  if (value === '0') return false;
  throw new ConfigError(
    `AUTHZ_SEED must be 1 (seed an empty store at its first start, the default) or 0 (leave it empty), not ${JSON.stringify(value)}`,
  );
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.AUTHZ_DATA_DIR || '.authz');
  const config: Config = {
    port,
    host,
    dataDir,
    masterKeyFile: resolve(env.AUTHZ_MASTER_KEY_FILE || `${dataDir}.master-key`),
    testClock: env.AUTHZ_TEST_CLOCK === '1',
    baseUrl: (env.AUTHZ_BASE_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/$/, ''),
    decisionBatchSize: int(env, 'AUTHZ_DECISION_BATCH', 500, 1, 10_000),
    keyRateLimit: int(env, 'AUTHZ_KEY_RATE_LIMIT', DEFAULT_KEY_RATE_LIMIT, 0, 1_000_000_000),
    webhookAllowPrivate: env.AUTHZ_WEBHOOK_ALLOW_PRIVATE === '1',
    webhookLeaseSeconds: int(env, 'AUTHZ_WEBHOOK_LEASE_SECONDS', 60, 1, 86_400),
    budgetSweepSeconds: int(env, 'AUTHZ_BUDGET_SWEEP_SECONDS', 5, 1, 86_400),
    sessionIdleHours: int(env, 'AUTHZ_SESSION_IDLE_HOURS', 24, 1, 8_760),
    maxPolicies: int(env, 'AUTHZ_MAX_POLICIES', 100_000, 1, 10_000_000),
    decisionDeadlineMs: int(env, 'AUTHZ_DECISION_DEADLINE_MS', 10_000, 100, 600_000),
    alerts: {
      denyThreshold: int(env, 'AUTHZ_ALERT_DENY_THRESHOLD', DEFAULT_ALERT_THRESHOLDS.denyThreshold, 1, 1e9),
      denyWindowSeconds: int(
        env,
        'AUTHZ_ALERT_DENY_WINDOW_SECONDS',
        DEFAULT_ALERT_THRESHOLDS.denyWindowSeconds,
        1,
        86_400,
      ),
      invalidTokenThreshold: int(
        env,
        'AUTHZ_ALERT_INVALID_TOKEN_THRESHOLD',
        DEFAULT_ALERT_THRESHOLDS.invalidTokenThreshold,
        1,
        1e9,
      ),
      invalidTokenWindowSeconds: int(
        env,
        'AUTHZ_ALERT_INVALID_TOKEN_WINDOW_SECONDS',
        DEFAULT_ALERT_THRESHOLDS.invalidTokenWindowSeconds,
        1,
        86_400,
      ),
      volumeFactor: int(env, 'AUTHZ_ALERT_VOLUME_FACTOR', DEFAULT_ALERT_THRESHOLDS.volumeFactor, 1, 1e6),
      volumeMin: int(env, 'AUTHZ_ALERT_VOLUME_MIN', DEFAULT_ALERT_THRESHOLDS.volumeMin, 1, 1e9),
      volumeWindowSeconds: int(
        env,
        'AUTHZ_ALERT_VOLUME_WINDOW_SECONDS',
        DEFAULT_ALERT_THRESHOLDS.volumeWindowSeconds,
        1,
        86_400,
      ),
      volumeBaselineWindows: int(
        env,
        'AUTHZ_ALERT_VOLUME_BASELINE_WINDOWS',
        DEFAULT_ALERT_THRESHOLDS.volumeBaselineWindows,
        1,
        10_000,
      ),
    },
    redactContext: redactionPaths(env.AUTHZ_REDACT_CONTEXT ?? ''),
    otel: env.AUTHZ_OTEL === '1',
    role: processRole(env.AUTHZ_ROLE),
    retentionDays: retentionDays(env),
    seed: seedFlag(env.AUTHZ_SEED),
    maxConnections: int(env, 'AUTHZ_MAX_CONNECTIONS', 10_000, 1, 10_000_000),
    requestTimeoutMs: int(env, 'AUTHZ_REQUEST_TIMEOUT_MS', 10_000, 100, 600_000),
    signWorker: env.AUTHZ_SIGN_WORKER === '1',
    historyLeases: env.AUTHZ_HISTORY_LEASES !== '0',
  };
  if (env.DATABASE_URL) config.databaseUrl = env.DATABASE_URL;
  if (env.LOG_LEVEL) {
    if (!(LOG_LEVELS as readonly string[]).includes(env.LOG_LEVEL))
      throw new ConfigError(
        `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (or unset: errors and a summary a minute), not ${JSON.stringify(env.LOG_LEVEL)}`,
      );
    config.logLevel = env.LOG_LEVEL as LogLevel;
  }
  if (config.role !== 'all' && !config.databaseUrl) {
    throw new ConfigError(
      `AUTHZ_ROLE=${config.role} needs DATABASE_URL: the embedded store belongs to one process, which must both serve the API and send the webhooks (AUTHZ_ROLE=all)`,
    );
  }
  if (env.AUTHZ_MASTER_KEY) {
    if (env.AUTHZ_MASTER_KEY.length < 16) throw new ConfigError('AUTHZ_MASTER_KEY must be at least 16 characters');
    config.masterKey = env.AUTHZ_MASTER_KEY;
  }
  if (env.AUTHZ_METRICS_TOKEN) {
    if (env.AUTHZ_METRICS_TOKEN.length < 16)
      throw new ConfigError('AUTHZ_METRICS_TOKEN must be at least 16 characters');
    config.metricsToken = env.AUTHZ_METRICS_TOKEN;
  }
  if (env.AUTHZ_ADMIN_TOKEN) {
    if (env.AUTHZ_ADMIN_TOKEN.length < 16) throw new ConfigError('AUTHZ_ADMIN_TOKEN must be at least 16 characters');
    config.adminToken = env.AUTHZ_ADMIN_TOKEN;
  }
  return config;
}
