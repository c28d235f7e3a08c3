/**
 * The Standard Webhooks signature (https://www.standardwebhooks.com), sent
 * besides `X-Service-Signature` by endpoints registered with
 * `"standard_webhooks": true`, so that receivers can refuse old deliveries
 * (replays):
 *
 *   webhook-id: <the event id>
 *   webhook-timestamp: <Unix seconds, the service clock at the attempt>
 *   webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">
 *
 * keyed with the bytes of the secret's part after `whsec_`, base64-decoded (so
 * the secret must be `whsec_` + canonical base64, as new secrets are).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const TIMESTAMP = /^[0-9]{1,12}$/;
/** A delivery older or newer than this (seconds) is refused by default, as the `standardwebhooks` packages do. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * The HMAC key of a `whsec_<base64>` secret (the prefix is optional), or null
 * when the rest is not canonical, padded base64 of at least one byte (an older
 * `whsec_<base64url>` secret, say).
 *
 * @example
 * standardWebhookKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'); // Buffer of 24 bytes
 * standardWebhookKey('whsec_not-base64_'); // null
 */
export function standardWebhookKey(secret: string): Buffer | null {
  if (typeof secret !== 'string') return null;
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  if (!BASE64.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 && key.toString('base64') === encoded ? key : null;
}

function keyOrThrow(secret: string): Buffer {
  const key = standardWebhookKey(secret);
  // A configuration error, not a bad delivery: refuse loudly.
  if (key === null)
    throw new TypeError(
      'a Standard Webhooks secret is whsec_ followed by base64 (the endpoint secret shown at registration)',
    );
  return key;
}

function hmac(key: Buffer, id: string, timestamp: number, body: string | Uint8Array): Buffer {
  if (typeof body !== 'string' && !(body instanceof Uint8Array))
    throw new TypeError('the body must be the raw bytes (or string) sent, not a parsed object');
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

/**
 * The `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`.
 *
 * @example
 * signStandardWebhook('evt_1', 1795600000, '{"id":"evt_1"}', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'); // 'v1,...'
 */
export function signStandardWebhook(id: string, timestamp: number, body: string | Uint8Array, secret: string): string {
  return `v1,${hmac(keyOrThrow(secret), id, timestamp, body).toString('base64')}`;
}

/** Request headers as Node gives them (names lower-case), or a fetch `Headers`. */
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}

export interface StandardWebhookOptions {
  /** Seconds a delivery's timestamp may be from `now`, either way (default 300). */
  toleranceSeconds?: number;
  /** The receiver's time in ms (default `Date.now()`). */
  now?: number;
}

/**
 * Whether a delivery's Standard Webhooks headers are right for `rawBody`: a
 * `webhook-id`, a `webhook-timestamp` within `toleranceSeconds` of now (an old
 * delivery replayed is refused), and among the space-separated
 * `webhook-signature` values a `v1` one that matches, compared in constant time.
 * Anything missing or malformed is false, never an exception.
 *
 * @throws TypeError for a programming error: a secret that is not `whsec_` +
 *   base64, or a body that is neither a string nor bytes.
 *
 * @example
 * if (!verifyStandardWebhook(rawBody, request.headers, process.env.WEBHOOK_SECRET!)) return reply.code(401).send();
 */
export function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options: StandardWebhookOptions = {},
): boolean {
  const key = keyOrThrow(secret);
  const id = header(headers, 'webhook-id')?.trim();
  const stamp = header(headers, 'webhook-timestamp')?.trim();
  const signatures = header(headers, 'webhook-signature') ?? '';
  // Computed whatever the headers hold, so the time taken says nothing about them.
  const timestamp = stamp !== undefined && TIMESTAMP.test(stamp) ? Number(stamp) : NaN;
  const expected = hmac(key, id ?? '', Number.isNaN(timestamp) ? 0 : timestamp, rawBody);
  if (!id || Number.isNaN(timestamp)) return false;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs((options.now ?? Date.now()) / 1000 - timestamp) > tolerance) return false;
  let found = false;
  for (const candidate of signatures.split(' ')) {
    if (!candidate.startsWith('v1,')) continue;
    const given = Buffer.from(candidate.slice(3), 'base64');
    if (
      given.length === expected.length &&
      timingSafeEqual(given, expected) &&
      given.toString('base64') === candidate.slice(3)
    )
      found = true;
  }
  return found;
}
