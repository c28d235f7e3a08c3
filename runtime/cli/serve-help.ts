/**
 * `authz serve --help`: the options and every environment variable the service
 * reads, each with its default (docs/operations.md explains each at length).
 * test/runtime/cli/help.test.ts checks that every variable the runtime's sources
 * read is listed here.
 */
import { DEFAULT_ALERT_THRESHOLDS } from '../alerts/security-alerts.js';
import { DEFAULT_KEY_RATE_LIMIT } from '../config.js';

/** One environment variable: its name, its default (as a reader would write it) and what it does. */
export interface ServeVariable {
  name: string;
  fallback: string;
  what: string;
}

const A = DEFAULT_ALERT_THRESHOLDS;

/** Every variable `authz serve` reads, in the order of docs/operations.md. */
export const SERVE_VARIABLES: readonly ServeVariable[] = [
  { name: 'PORT', fallback: '8080', what: 'the port to listen on (0: any free port)' },
  { name: 'HOST', fallback: '127.0.0.1', what: 'the address to listen on (0.0.0.0: every interface)' },
  { name: 'DATABASE_URL', fallback: 'unset', what: 'PostgreSQL (postgres://...); unset: the embedded store' },
  { name: 'AUTHZ_DATA_DIR', fallback: '.authz', what: 'where the embedded store keeps its files' },
  {
    name: 'AUTHZ_SEED',
    fallback: '1',
    what: '0: the first start on an empty store creates no account, keys or example policies',
  },
  { name: 'AUTHZ_ADMIN_TOKEN', fallback: 'unset', what: 'enables the operator API (/admin/...); 16+ characters' },
  { name: 'AUTHZ_MASTER_KEY', fallback: 'unset', what: 'seals secrets at rest (16+ characters); unset: the key file' },
  {
    name: 'AUTHZ_MASTER_KEY_FILE',
    fallback: '<AUTHZ_DATA_DIR>.master-key',
    what: 'the master key file (generated at the first start)',
  },
  { name: 'AUTHZ_BASE_URL', fallback: 'http://HOST:PORT', what: "the service's public URL (permit issuer)" },
  {
    name: 'LOG_LEVEL',
    fallback: 'unset',
    what: 'unset: errors and a summary of the requests a minute; info: a JSON line per request; debug, trace: more',
  },
  {
    name: 'AUTHZ_ROLE',
    fallback: 'all',
    what: 'all, api (sends no webhooks) or dispatcher (only webhooks); api and dispatcher need DATABASE_URL',
  },
  { name: 'AUTHZ_TEST_CLOCK', fallback: 'unset', what: '1: POST /admin/clock moves the service clock forward' },
  {
    name: 'AUTHZ_METRICS_TOKEN',
    fallback: 'unset',
    what: 'turns GET /metrics on, behind this bearer token (16+ characters)',
  },
  {
    name: 'AUTHZ_KEY_RATE_LIMIT',
    fallback: String(DEFAULT_KEY_RATE_LIMIT),
    what: 'requests per second per API key (0: off)',
  },
  { name: 'AUTHZ_MAX_POLICIES', fallback: '100000', what: 'most policies in one environment' },
  { name: 'AUTHZ_DECISION_BATCH', fallback: '500', what: 'most decisions stored in one statement' },
  { name: 'AUTHZ_DECISION_DEADLINE_MS', fallback: '10000', what: 'a decision the store has not answered by then: 503' },
  { name: 'AUTHZ_BUDGET_SWEEP_SECONDS', fallback: '5', what: 'how often expired budget holds are released' },
  {
    name: 'AUTHZ_SESSION_IDLE_HOURS',
    fallback: '24',
    what: 'a session ends, labels and all, after this many hours without a decision',
  },
  {
    name: 'AUTHZ_WEBHOOK_LEASE_SECONDS',
    fallback: '60',
    what: 'how long a dispatcher owns a claimed webhook delivery',
  },
  {
    name: 'AUTHZ_WEBHOOK_ALLOW_PRIVATE',
    fallback: 'unset',
    what: '1: webhook URLs may use private and loopback addresses',
  },
  { name: 'AUTHZ_REDACT_CONTEXT', fallback: 'unset', what: 'context paths never stored, comma-separated' },
  {
    name: 'AUTHZ_MAX_CONNECTIONS',
    fallback: '10000',
    what: 'most open connections (lowered to the file-descriptor soft limit - 64)',
  },
  {
    name: 'AUTHZ_REQUEST_TIMEOUT_MS',
    fallback: '10000',
    what: 'a connection without a complete request for this long is closed',
  },
  { name: 'AUTHZ_RETENTION_DAYS', fallback: '90', what: 'days of decisions kept (0 or off: forever)' },
  {
    name: 'AUTHZ_OTEL',
    fallback: 'unset',
    what: '1: OpenTelemetry traces over OTLP/HTTP (the standard OTEL_* variables configure the exporter)',
  },
  { name: 'OTEL_SERVICE_NAME', fallback: 'agent-authz', what: "the traces' service name (with AUTHZ_OTEL=1)" },
  {
    name: 'AUTHZ_SIGN_WORKER',
    fallback: 'unset',
    what: '1: permit tokens signed by a worker thread (an experiment; same tokens)',
  },
  {
    name: 'AUTHZ_HISTORY_LEASES',
    fallback: '1',
    what: '0: every history decision through the limits gate, none decided from history leases (docs/history.md)',
  },
  {
    name: 'AUTHZ_ALERT_DENY_THRESHOLD',
    fallback: String(A.denyThreshold),
    what: 'security alert: denials of one agent in the window',
  },
  { name: 'AUTHZ_ALERT_DENY_WINDOW_SECONDS', fallback: String(A.denyWindowSeconds), what: 'its window' },
  {
    name: 'AUTHZ_ALERT_INVALID_TOKEN_THRESHOLD',
    fallback: String(A.invalidTokenThreshold),
    what: 'security alert: invalid permit tokens in the window',
  },
  {
    name: 'AUTHZ_ALERT_INVALID_TOKEN_WINDOW_SECONDS',
    fallback: String(A.invalidTokenWindowSeconds),
    what: 'its window',
  },
  {
    name: 'AUTHZ_ALERT_VOLUME_FACTOR',
    fallback: String(A.volumeFactor),
    what: 'security alert: decisions this many times the usual volume',
  },
  { name: 'AUTHZ_ALERT_VOLUME_MIN', fallback: String(A.volumeMin), what: 'and at least this many' },
  { name: 'AUTHZ_ALERT_VOLUME_WINDOW_SECONDS', fallback: String(A.volumeWindowSeconds), what: 'its window' },
  {
    name: 'AUTHZ_ALERT_VOLUME_BASELINE_WINDOWS',
    fallback: String(A.volumeBaselineWindows),
    what: 'windows the usual volume is taken over',
  },
];

/** The text `authz serve --help` prints. */
export function serveUsage(): string {
  const width = Math.max(...SERVE_VARIABLES.map((v) => v.name.length));
  const fallbackWidth = Math.max(...SERVE_VARIABLES.map((v) => v.fallback.length));
  const rows = SERVE_VARIABLES.map((v) => `  ${v.name.padEnd(width)}  ${v.fallback.padEnd(fallbackWidth)}  ${v.what}`);
  return [
    'usage: authz serve [--bundle FILE]',
    '  runs the service (npm start runs it); configuration from the environment',
    "  --bundle FILE  load this bundle (authz compile) into the default account's test environment at start",
    '',
    `environment (variable, default, what):`,
    ...rows,
    '',
    'docs/operations.md says more of each. Exit codes: 2 bad configuration or a port in use, 1 an unexpected failure.',
  ].join('\n');
}
