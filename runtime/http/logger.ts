/**
 * The service's log (Fastify's pino) options, shared by `authz serve` and the
 * tests. Lines of a request carry its id (`reqId`, the `req_...` of the
 * Request-Id header). Secrets never reach a line:
 *
 * - by path (pino `redact`): the Authorization header, and fields named like a
 *   secret (`secret`, `key`, `token`, `permit_token`, `masterKey`, `adminToken`,
 *   `metricsToken`, `signingKey`, `private_key`, SQL `parameters`), at the top
 *   level or one level down;
 * - by value: API keys (`svc_test_sk_...`, `svc_live_sk_...`), webhook secrets
 *   (`whsec_...`), permit tokens (JWS) and the configured admin, metrics and
 *   master secrets are masked in URLs, messages and error texts.
 *
 * Request and response bodies are never logged (the default request and reply
 * serializers log method, url, host, address and status only).
 */
import type { FastifyServerOptions } from 'fastify';

type LoggerOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>;

export const REDACTED = '[REDACTED]';

const SECRET_FIELDS = [
  'authorization',
  'secret',
  'key',
  'token',
  'permit_token',
  'masterKey',
  'adminToken',
  'metricsToken',
  'signingKey',
  'private_key',
  'parameters',
];

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
];

/** Secrets recognisable by their shape. */
const SHAPED = [
  /(svc_(?:test|live)_sk_)[A-Za-z0-9]+/g,
  // base64 (now) or base64url (endpoints registered before): every character of either.
  /(whsec_)[A-Za-z0-9_+/=-]+/g,
  // A compact JWS (permit token): base64url JSON header and claims, then the signature.
  /(eyJ[A-Za-z0-9_-]*\.)eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+/g,
];
const HINT = /svc_|whsec_|eyJ/;

export interface LoggerSettings {
  level: string;
  /** Where lines go (default: stdout). */
  stream?: { write(line: string): void };
  /** Configured secrets masked wherever they appear (admin token, master key, metrics token). */
  secrets?: ReadonlyArray<string | undefined>;
}

/** A masking function for the given literal secrets plus the shaped ones. */
export function secretScrubber(secrets: ReadonlyArray<string | undefined> = []): (text: string) => string {
  const literals = secrets.filter((s): s is string => typeof s === 'string' && s.length > 0);
  return (text) => {
    let out = text;
    if (HINT.test(out)) for (const re of SHAPED) out = out.replace(re, `$1${REDACTED}`);
    for (const s of literals) if (out.includes(s)) out = out.split(s).join(REDACTED);
    return out;
  };
}

export function loggerOptions(settings: LoggerSettings): LoggerOptions {
  const scrub = secretScrubber(settings.secrets);
  return {
    level: settings.level,
    ...(settings.stream ? { stream: settings.stream } : {}),
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    serializers: {
      // Fastify's request serializer, with the URL masked (a key pasted into a query string).
      req: (request: {
        method: string;
        url: string;
        host?: string;
        ip?: string;
        socket?: { remotePort?: number };
      }) => ({
        method: request.method,
        url: typeof request.url === 'string' ? scrub(request.url) : request.url,
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
      err: (error: Error & { code?: unknown; statusCode?: unknown }) => ({
        type: error.name,
        message: scrub(String(error.message)),
        stack: scrub(String(error.stack ?? '')),
        ...(error.code !== undefined ? { code: error.code } : {}),
        ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
      }),
    },
    hooks: {
      // Messages and string arguments (e.g. `log.info('... %s', url)`).
      logMethod(args, method) {
        for (let i = 0; i < args.length; i++) if (typeof args[i] === 'string') args[i] = scrub(args[i] as string);
        return method.apply(this, args as Parameters<typeof method>);
      },
    },
  } as LoggerOptions;
}
